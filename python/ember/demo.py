"""ember's first-run demo: a small MLP learns to separate two interleaved
spirals, trained with ember's autograd and plain SGD on data made here.

    python -m ember.demo
"""
import math
import time

import ember


def make_spirals(n_per_class, noise=0.15, seed=0):
    """Two interleaved spirals in the plane, labelled 0 and 1."""
    ember.manual_seed(seed)
    t = ember.linspace(0.25, 3.5 * math.pi, n_per_class)
    points, labels = [], []
    for label, phase in ((0, 0.0), (1, math.pi)):
        r = t / (3.5 * math.pi)
        x = ember.stack([r * ember.cos(t + phase), r * ember.sin(t + phase)], dim=1)
        points.append(x + noise * 0.1 * ember.randn(n_per_class, 2))
        labels.append(ember.full((n_per_class,), label, dtype=ember.int64))
    return ember.cat(points), ember.cat(labels)


def init_layer(n_in, n_out):
    w = (ember.randn(n_in, n_out) * math.sqrt(2.0 / n_in)).requires_grad_()
    b = ember.zeros(n_out, requires_grad=True)
    return w, b


def forward(params, x):
    h = x
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i < len(params) - 1:
            h = h.relu()
    return h


def cross_entropy(logits, labels):
    logp = ember.log_softmax(logits, dim=1)
    return -logp[ember.arange(labels.shape[0]), labels].mean()


def main():
    x, y = make_spirals(500)
    params = [init_layer(2, 64), init_layer(64, 64), init_layer(64, 2)]
    lr, steps = 0.5, 1500
    start = time.perf_counter()
    print(f"training a 2-64-64-2 MLP on {x.shape[0]} spiral points")
    for step in range(steps + 1):
        loss = cross_entropy(forward(params, x), y)
        for w, b in params:
            w.grad = None
            b.grad = None
        loss.backward()
        with ember.no_grad():
            for w, b in params:
                w -= lr * w.grad
                b -= lr * b.grad
        if step % 250 == 0:
            with ember.no_grad():
                acc = (forward(params, x).argmax(dim=1) == y).float().mean().item()
            print(f"step {step:5d}  loss {loss.item():.4f}  accuracy {acc:.3f}")
    print(f"final accuracy {acc:.3f} after {steps} steps in {time.perf_counter() - start:.1f} s")
    return acc


if __name__ == "__main__":
    main()
