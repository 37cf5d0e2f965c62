"""The references of nn_test.go, in PyTorch, float64: its recurrent layers
(torch.nn.LSTM and torch.nn.GRU given eagerflow's weights), BatchNorm in
training (F.batch_norm), the convolution layers of conv_layers_test.go
(F.conv1d, F.conv_transpose2d, F.conv2d with groups), its losses and
torch.optim's optimizers; and a
classifier as torch.autocast (bfloat16) trains it, its float32 sums
written out (mixed_test.go).

Each case on standard input (JSON, see runScript) names its kind, its
settings, the input x and loss weights w (the loss is sum(out * w)), and
the variables by name; an optimizer's case holds each step's gradients
and its settings end with each step's learning rate. The output line
holds the output and the gradients of x and of every variable (a layer),
the running statistics after the step (BatchNorm), or the variables
after each step (an optimizer)."""
import json
import sys

import torch
import torch.nn.functional as F

from torch_eval import dec, enc  # float64 arrays as the Go side encodes them

torch.set_default_dtype(torch.float64)


def recurrent(case, x, p):
    """torch.nn.LSTM or GRU (one layer, batch first) from eagerflow's cell:
    kernels [in, k*h] are PyTorch's weight_ih transposed; the LSTM's gates
    i, f, g, o are in PyTorch's order, its b_hh zero; the GRU's z, r, n
    become r, z, n, its recurrent bias b_hh. Bidirectional (settings[2]):
    the cells' variables named fwd/... and bwd/..., PyTorch's directions,
    the last outputs its final states side by side."""
    hid, sequences = int(case["settings"][0]), case["settings"][1] == 1
    both = len(case["settings"]) > 2 and case["settings"][2] == 1
    kind = case["kind"]
    h = hid

    def gru_order(t):  # z, r, n along the last dimension -> r, z, n
        return torch.cat([t[..., h:2 * h], t[..., :h], t[..., 2 * h:]], -1)

    def back_order(t):  # r, z, n -> z, r, n
        return torch.cat([t[..., h:2 * h], t[..., :h], t[..., 2 * h:]], -1)

    module = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    m = module(x.shape[2], hid, batch_first=True, bidirectional=both)
    directions = [("fwd/", ""), ("bwd/", "_reverse")] if both else [("", "")]
    for prefix, suffix in directions:
        if kind == "lstm":
            w_ih, w_hh, b_ih = p[prefix + "kernel"].T, p[prefix + "recurrent_kernel"].T, p[prefix + "bias"]
            b_hh = torch.zeros_like(b_ih)
        else:
            w_ih, w_hh = gru_order(p[prefix + "kernel"]).T, gru_order(p[prefix + "recurrent_kernel"]).T
            b_ih, b_hh = gru_order(p[prefix + "bias"]), gru_order(p[prefix + "recurrent_bias"])
        with torch.no_grad():
            getattr(m, "weight_ih_l0" + suffix).copy_(w_ih)
            getattr(m, "weight_hh_l0" + suffix).copy_(w_hh)
            getattr(m, "bias_ih_l0" + suffix).copy_(b_ih)
            getattr(m, "bias_hh_l0" + suffix).copy_(b_hh)
    out, state = m(x)
    if not sequences:
        hn = state[0] if kind == "lstm" else state
        out = torch.cat([hn[0], hn[1]], -1) if both else out[:, -1]
    grads = {}

    def back(w):
        (out * w).sum().backward()
        for prefix, suffix in directions:
            g = lambda name: getattr(m, name + "_l0" + suffix).grad
            if kind == "lstm":
                grads[prefix + "kernel"] = g("weight_ih").T
                grads[prefix + "recurrent_kernel"] = g("weight_hh").T
                grads[prefix + "bias"] = g("bias_ih")
            else:
                grads[prefix + "kernel"] = back_order(g("weight_ih").T)
                grads[prefix + "recurrent_kernel"] = back_order(g("weight_hh").T)
                grads[prefix + "bias"] = back_order(g("bias_ih"))
                grads[prefix + "recurrent_bias"] = back_order(g("bias_hh"))
    return out, back, grads


def batchnorm(case, x, p):
    axis, momentum, eps = int(case["settings"][0]), case["settings"][1], case["settings"][2]
    if axis < 0:
        axis += x.dim()
    xc = x.movedim(axis, 1)  # F.batch_norm normalizes dimension 1
    rm, rv = p["moving_mean"].clone(), p["moving_variance"].clone()
    out = F.batch_norm(xc, None, None, p["gamma"], p["beta"], training=True, eps=eps).movedim(1, axis)
    dims = [d for d in range(x.dim()) if d != axis]
    mean = x.detach().mean(dims)
    var = x.detach().var(dims, unbiased=False)
    state = [momentum * rm + (1 - momentum) * mean, momentum * rv + (1 - momentum) * var]
    grads = {}

    def back(w):
        (out * w).sum().backward()
        grads["gamma"], grads["beta"] = p["gamma"].grad, p["beta"].grad
    return out, back, grads, state


def conv(case, x, p):
    """nn's Conv1D, Conv2DTranspose and DepthwiseConv2D as PyTorch's
    convolutions, channels first: x in eagerflow's layout (channels last
    unless the settings say first), the padding given as amounts (F.pad
    before the convolution; a transposed one's output cropped from its
    full size, zero-filled where the forward convolution's windows do not
    reach). Filters: Conv1D [K C O], Conv2DTranspose [KH KW O C],
    DepthwiseConv2D [KH KW C M]."""
    kind, s = case["kind"], case["settings"]
    f, b = p["filter"], p["bias"]
    if kind == "conv1d":
        stride, dil, lo, hi, first = int(s[0]), int(s[1]), int(s[2]), int(s[3]), s[4] == 1
        xc = x if first else x.permute(0, 2, 1)
        out = F.conv1d(F.pad(xc, (lo, hi)), f.permute(2, 1, 0), b, stride=stride, dilation=dil)
        out = out if first else out.permute(0, 2, 1)
    elif kind == "conv2d_transpose":
        sh, sw, dh, dw, low_h, low_w, oh, ow, first = [int(v) for v in s]
        xc = x if first else x.permute(0, 3, 1, 2)
        full = F.conv_transpose2d(xc, f.permute(3, 2, 0, 1), None, stride=(sh, sw), dilation=(dh, dw))
        full = F.pad(full, (0, max(low_w + ow - full.shape[3], 0), 0, max(low_h + oh - full.shape[2], 0)))
        out = full[:, :, low_h:low_h + oh, low_w:low_w + ow] + b.reshape(1, -1, 1, 1)
        out = out if first else out.permute(0, 2, 3, 1)
    else:
        stride, dil, top, bottom, left, right, first, mult = [int(v) for v in s]
        xc = x if first else x.permute(0, 3, 1, 2)
        kh, kw, c = f.shape[0], f.shape[1], f.shape[2]
        w = f.reshape(kh, kw, c * mult).permute(2, 0, 1).unsqueeze(1)
        out = F.conv2d(F.pad(xc, (left, right, top, bottom)), w, b, stride=stride, dilation=dil, groups=c)
        out = out if first else out.permute(0, 2, 3, 1)
    grads = {}

    def back(w):
        (out * w).sum().backward()
        grads["filter"], grads["bias"] = f.grad, b.grad
    return out, back, grads


def optimizer(case):
    kind, s, names = case["kind"], case["settings"], case["names"]
    clip, scale = None, 1.0
    if kind.endswith("+clip"):  # clip_grad_norm_ to s[0] after unscaling by s[1]
        kind, clip, scale, s = kind[:-len("+clip")], s[0], s[1], s[2:]
    ps = [dec(a).requires_grad_() for a in case["weights"]]
    steps = case["grads"]
    rates = s[-len(steps):]
    if kind == "sgd":
        opt = torch.optim.SGD(ps, lr=rates[0], momentum=s[0], nesterov=s[1] == 1)
    elif kind == "adam":
        b1, b2, eps, wd = s[0], s[1], s[2], s[3]
        if wd == 0:
            opt = torch.optim.Adam(ps, lr=rates[0], betas=(b1, b2), eps=eps)
        else:  # the decay on matrices only (nn.DecayMatrices)
            groups = [{"params": [q for q in ps if q.dim() >= 2], "weight_decay": wd},
                      {"params": [q for q in ps if q.dim() < 2], "weight_decay": 0.0}]
            opt = torch.optim.AdamW(groups, lr=rates[0], betas=(b1, b2), eps=eps)
    else:
        opt = torch.optim.RMSprop(ps, lr=rates[0], alpha=s[0], momentum=s[1], eps=s[2])
    out = []
    for k, gs in enumerate(steps):
        for g in opt.param_groups:
            g["lr"] = rates[k]
        for q, g in zip(ps, gs):
            q.grad = dec(g)
            if scale != 1.0:  # GradScaler's unscale_
                q.grad.mul_(1.0 / scale)
        if clip is not None:  # TensorFlow's clip_by_global_norm (clip_grad_norm_ adds 1e-6 to the norm)
            norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(q.grad) for q in ps]))
            for q in ps:
                q.grad.mul_(torch.clamp(clip / norm, max=1.0))
        opt.step()
        out.append([enc(q) for q in ps])
    return {"id": case["id"], "steps": out}


class Bf16Layer(torch.autograd.Function):
    """A layer as torch.autocast(bfloat16) runs it where oneDNN has
    bfloat16 kernels: the operands rounded to bfloat16, the products
    summed in float32, the result (bias included) rounded once; the
    gradients likewise, each rounded to bfloat16 (the master weights'
    widened back). PyTorch 1.13 on a CPU without AVX-512 (AMD Zen 3)
    accumulates its bfloat16 products in bfloat16 instead (93 roundings
    off over 48 terms), so the reference writes the float32 sums out.
    fn(x, w) is the layer's float32 product (a linear map or a
    convolution) and grads(x, w, gy) its two gradients in float32."""

    @staticmethod
    def forward(ctx, x, w, b, fn, grads):
        xb, wb = x.bfloat16().float(), w.bfloat16().float()
        ctx.save_for_backward(xb, wb)
        ctx.grads = grads
        return fn(xb, wb, b.bfloat16().float()).bfloat16()

    @staticmethod
    def backward(ctx, gy):
        xb, wb = ctx.saved_tensors
        g = gy.float()
        gx, gw, gb = ctx.grads(xb, wb, g)
        return gx.bfloat16(), gw.bfloat16().float(), gb.bfloat16().float(), None, None


def bf16_linear(x, w, b):
    """x·w + b with w [in, out] (eagerflow's layout), as Bf16Layer."""
    return Bf16Layer.apply(x, w, b, lambda x, w, b: x @ w + b,
                           lambda x, w, g: (g @ w.t(), x.t() @ g, g.sum(0)))


def bf16_conv_nhwc(x, f, b):
    """A 3x3 'same' convolution of NHWC x by the HWIO filter f, as
    Bf16Layer; NCHW out (as F.conv2d gives it)."""
    def fwd(x, f, b):
        return F.conv2d(x.permute(0, 3, 1, 2), f.permute(3, 2, 0, 1), b, padding=1)

    def grads(x, f, g):
        xn, fn = x.permute(0, 3, 1, 2), f.permute(3, 2, 0, 1)
        gx = torch.nn.grad.conv2d_input(xn.shape, fn, g, padding=1).permute(0, 2, 3, 1)
        gf = torch.nn.grad.conv2d_weight(xn, fn.shape, g, padding=1).permute(2, 3, 1, 0)
        return gx, gf, g.sum((0, 2, 3))
    return Bf16Layer.apply(x, f, b, fwd, grads)


def mixed_mlp(case):
    """A two-layer classifier (Linear, ReLU, Linear; or, mixed_cnn, a 3x3
    convolution, ReLU, 2x2 max pooling and Linear) as torch.autocast in
    bfloat16 runs it (Bf16Layer): float32 parameters (the master
    weights), the layers in bfloat16, the logits widened to float32 for
    the cross-entropy, as nn.MixedBFloat16. x the inputs, w the class
    indices; the weights the kernels ([in, out], eagerflow's layout) and
    biases. The loss and the parameters' (float32) gradients."""
    ps = [dec(a).float().requires_grad_() for a in case["weights"]]
    x, y = dec(case["x"]).float(), dec(case["w"]).long()
    if case["kind"] == "mixed_cnn":  # NHWC images, an HWIO filter
        f, fb, k2, b2 = ps
        h = bf16_conv_nhwc(x, f, fb)
        h = F.max_pool2d(F.relu(h), 2).permute(0, 2, 3, 1).reshape(x.shape[0], -1)
    else:
        k1, b1, k2, b2 = ps
        h = F.relu(bf16_linear(x, k1, b1))
    logits = bf16_linear(h, k2, b2)
    out = F.cross_entropy(logits.float(), y)
    out.backward()
    return {"id": case["id"], "out": enc(out.double()), "grads": [enc(q.grad.double()) for q in ps]}


def loss(case):
    """A loss of x (the predictions or logits) and w (the labels), mean
    reduction, with the gradients of both (of x alone for class indices)."""
    kind = case["kind"]
    x = dec(case["x"]).requires_grad_()
    w = dec(case["w"])
    settings = case.get("settings") or []
    smoothing = settings[0] if settings else 0.0
    if kind == "sparse_ce":
        ignore = settings[1] if len(settings) > 1 else -100
        out = F.cross_entropy(x.movedim(-1, 1), w.long(), ignore_index=int(ignore), label_smoothing=smoothing)
        out.backward()
        return {"id": case["id"], "out": enc(out), "grads": [enc(x.grad)]}
    w.requires_grad_()
    if kind == "mse":
        out = F.mse_loss(x, w)
    elif kind == "softmax_ce":  # classes last here, in dimension 1 there
        out = F.cross_entropy(x.movedim(-1, 1), w.movedim(-1, 1), label_smoothing=smoothing)
    else:
        out = F.binary_cross_entropy_with_logits(x, w)
    out.backward()
    return {"id": case["id"], "out": enc(out), "grads": [enc(x.grad), enc(w.grad)]}


def main():
    for case in json.load(sys.stdin)["cases"]:
        if case["kind"].removesuffix("+clip") in ("sgd", "adam", "rmsprop"):
            print(json.dumps(optimizer(case)), flush=True)
            continue
        if case["kind"] in ("mixed_mlp", "mixed_cnn"):
            print(json.dumps(mixed_mlp(case)), flush=True)
            continue
        if case["kind"] in ("mse", "sparse_ce", "softmax_ce", "bce_logits"):
            print(json.dumps(loss(case)), flush=True)
            continue
        x = dec(case["x"]).requires_grad_()
        names = case["names"]
        p = {n: dec(a).requires_grad_() for n, a in zip(names, case["weights"])}
        state = None
        if case["kind"] == "batchnorm":
            out, back, grads, state = batchnorm(case, x, p)
        elif case["kind"] in ("conv1d", "conv2d_transpose", "depthwise"):
            out, back, grads = conv(case, x, p)
        else:
            out, back, grads = recurrent(case, x, p)
        back(dec(case["w"]))
        res = {"id": case["id"], "out": enc(out), "grads": [enc(x.grad)] + [enc(grads[n]) for n in names if n in grads]}
        if state is not None:
            res["state"] = [enc(t) for t in state]
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
