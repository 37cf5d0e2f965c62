"""The PyTorch twin of main.go, for comparing the two side by side: the
same data, model, optimizer, validation slice and test. Runs with Debian's
python3-torch and python3-numpy: python3 twin.py"""
import gzip

import numpy as np
import torch
from torch import nn

DIR = "/usr/share/datasets/fashion-mnist"


def load(prefix, n):
    with gzip.open(f"{DIR}/{prefix}-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)[:n]
    with gzip.open(f"{DIR}/{prefix}-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
    return torch.from_numpy(images.copy()), torch.from_numpy(labels.astype(np.int64))


def batches(x, y, size, shuffle=False):
    order = torch.randperm(len(x)) if shuffle else torch.arange(len(x))
    for i in range(0, len(x), size):
        idx = order[i:i + size]
        yield x[idx].float() / 255, y[idx]


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        right = sum((model(bx).argmax(1) == by).sum().item() for bx, by in batches(x, y, 500))
    model.train()
    return right / len(x)


def train(n=60000, epochs=5):
    x, y = load("train", n)
    tx, ty = load("t10k", n // 6)
    vx, vy, x, y = x[:n // 12], y[:n // 12], x[n // 12:], y[n // 12:]
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        for bx, by in batches(x, y, 128, shuffle=True):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(bx), by)
            loss.backward()
            opt.step()
        print(f"epoch {epoch + 1}: val_accuracy {accuracy(model, vx, vy):.4f}")
    return accuracy(model, tx, ty)


if __name__ == "__main__":
    print(f"test accuracy {100 * train():.2f}%")
