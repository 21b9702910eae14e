"""A small CNN learns scikit-learn's bundled 8x8 handwritten digits (1,797 real
images, no download), written as a PyTorch program with `import ember as torch`.
It shows a tqdm progress bar, prints the test accuracy, and saves a plot of the
loss curve and of the test digits it got wrong.

    pip install ".[examples]"
    python examples/digits.py [--epochs 30] [--plot digits.png]
"""
import argparse

import matplotlib
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm import tqdm

import ember as torch
from ember import nn
import ember.nn.functional as F

matplotlib.use("Agg")  # draw to a file: no screen is needed
import matplotlib.pyplot as plt  # noqa: E402


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.pool(F.relu(self.conv2(x)))
        x = self.dropout(torch.flatten(x, 1))
        return self.fc2(F.relu(self.fc1(x)))


def load(seed):
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]  # N x 1 x 8 x 8 in [0, 1]
    x_train, x_test, y_train, y_test = train_test_split(
        images, digits.target, test_size=0.25, random_state=seed, stratify=digits.target)
    return (torch.from_numpy(x_train), torch.from_numpy(y_train).long(),
            torch.from_numpy(x_test), torch.from_numpy(y_test).long())


def train(model, x, y, epochs, batch_size, lr):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    model.train()
    for _ in tqdm(range(epochs), desc="training", unit="epoch"):
        order = torch.randperm(len(x))
        for start in range(0, len(x), batch_size):
            batch = order[start:start + batch_size]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x[batch]), y[batch])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def plot(losses, x_wrong, y_wrong, predicted, path):
    fig = plt.figure(figsize=(10, 4))
    ax = fig.add_subplot(1, 2, 1)
    ax.plot(losses, linewidth=0.8)
    ax.set(title="training loss", xlabel="step", ylabel="cross entropy", yscale="log")
    shown = min(len(x_wrong), 12)
    for i in range(shown):
        sub = fig.add_subplot(3, 8, 8 * (i // 4) + 5 + i % 4)
        sub.imshow(x_wrong[i, 0], cmap="gray_r")
        sub.set_title(f"{y_wrong[i]} as {predicted[i]}", fontsize=8)
        sub.axis("off")
    fig.suptitle(f"test digits misclassified: {len(x_wrong)}" + (f" (first {shown})" if shown else ""))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", default="digits.png", help="where to save the loss and mistakes plot")
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    x_train, y_train, x_test, y_test = load(args.seed)
    model = DigitsCNN()
    print(model)
    losses = train(model, x_train, y_train, args.epochs, args.batch_size, args.lr)

    model.eval()
    with torch.no_grad():
        predicted = model(x_test).argmax(dim=1)
    wrong = predicted != y_test
    accuracy = 1.0 - wrong.float().mean().item()
    print(f"test accuracy: {accuracy:.2%} ({int(wrong.sum())} of {len(y_test)} wrong)")
    plot(losses, x_test[wrong].numpy(), y_test[wrong].numpy(), predicted[wrong].numpy(), args.plot)
    print(f"plot saved to {args.plot}")
    return accuracy


if __name__ == "__main__":
    main()
