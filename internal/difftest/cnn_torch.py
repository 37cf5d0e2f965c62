"""The reference of cnn_test.go: a small CNN's training in PyTorch,
float64, from eagerflow's variables and batch.

A case (JSON on standard input, see runScript) holds the layout (NHWC or
NCHW), whether each convolution is followed by BatchNorm, the images and
labels, the variables by eagerflow's names (filters HWIO, dense kernels
[in, out]), BatchNorm's momentum and epsilon (Keras's meaning), and the
SGD's learning rate, momentum and steps. The output line holds the loss
and gradients at the given variables, the loss of each SGD step on the
same batch, and the variables and running statistics after the steps,
all under eagerflow's names and layouts."""
import json
import sys

import torch
import torch.nn.functional as F

from torch_eval import dec, enc  # float64 arrays as the Go side encodes them

torch.set_default_dtype(torch.float64)


def forward(case, v, running, x):
    """The model's logits for x; moves running (BatchNorm's statistics)."""
    nhwc = case["format"] == "NHWC"
    if nhwc:
        x = x.permute(0, 3, 1, 2).contiguous()  # as torch_eval.py's to_nchw
    for conv, norm in (("conv1", "bn1"), ("conv2", "bn2")):
        x = F.conv2d(x, v[conv + "/filter"].permute(3, 2, 0, 1), v[conv + "/bias"], padding=1)
        if case["norm"]:
            # Keras's running statistics: the batch's biased variance.
            mean = x.detach().mean((0, 2, 3))
            var = x.detach().var((0, 2, 3), unbiased=False)
            m = case["bn_momentum"]
            running[norm + "/moving_mean"] = m * running[norm + "/moving_mean"] + (1 - m) * mean
            running[norm + "/moving_variance"] = m * running[norm + "/moving_variance"] + (1 - m) * var
            x = F.batch_norm(x, None, None, v[norm + "/gamma"], v[norm + "/beta"], training=True, eps=case["bn_eps"])
        x = F.max_pool2d(torch.relu(x), 2)
    if nhwc:
        x = x.permute(0, 2, 3, 1)  # eagerflow flattens h, w, c
    x = x.reshape(x.shape[0], -1)
    x = torch.relu(x @ v["dense/kernel"] + v["dense/bias"])
    return x @ v["logits/kernel"] + v["logits/bias"]


def run(case):
    names = case["names"]
    v = {n: dec(a).requires_grad_() for n, a in zip(names, case["weights"])}
    running = {n: dec(a) for n, a in zip(case["state_names"] or [], case["state"] or [])}
    x, labels = dec(case["images"]), torch.tensor(case["labels"], dtype=torch.long)
    loss = F.cross_entropy(forward(case, v, dict(running), x), labels)
    grads = torch.autograd.grad(loss, [v[n] for n in names])
    out = {"id": case["id"], "loss": loss.item(), "grads": [enc(g) for g in grads]}
    params = [v[n] for n in names]
    opt = torch.optim.SGD(params, lr=case["lr"], momentum=case["momentum"])
    losses = []
    for _ in range(case["steps"]):
        opt.zero_grad()
        loss = F.cross_entropy(forward(case, v, running, x), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    out["losses"] = losses
    out["weights"] = [enc(p) for p in params]
    out["state"] = [enc(running[n]) for n in case["state_names"] or []]
    return out


def main():
    for case in json.load(sys.stdin)["cases"]:
        print(json.dumps(run(case)), flush=True)


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
