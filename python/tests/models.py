"""The small transformer and the data the training tests share, and the one-process reference."""
import torch
from torch import nn

D, HEADS, LAYERS, SEQ, BATCH = 32, 4, 2, 8, 12  # BATCH divides by 1, 2, 3 and 4 ranks


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(D, HEADS, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(D, 1)

    def forward(self, x):
        return self.head(self.encoder(x)).sum(-1)  # not a view (FSDP2 warns on views)


def make_model(seed=0):
    torch.manual_seed(seed)
    return Net()


def batch(step):
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randn(BATCH, SEQ, D, generator=g), torch.randn(BATCH, SEQ, generator=g)


def loss_fn(model, x, y):
    return nn.functional.mse_loss(model(x), y)


def train_one_process(steps, lr=0.05):
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for step in range(steps):
        x, y = batch(step)
        opt.zero_grad()
        loss_fn(model, x, y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def max_relative(a_list, b_list):
    """Largest |a - b| / max(|a|, |b|, 1e-3) over all elements (the training layer's measure)."""
    worst = 0.0
    for a, b in zip(a_list, b_list):
        scale = torch.maximum(torch.maximum(a.abs(), b.abs()), torch.full_like(a, 1e-3))
        worst = max(worst, ((a - b).abs() / scale).max().item())
    return worst


def norm_relative(a_list, b_list):
    """||a - b|| / ||b|| over all parameters together (for compressed-gradient runs)."""
    a = torch.cat([t.flatten() for t in a_list])
    b = torch.cat([t.flatten() for t in b_list])
    return ((a - b).norm() / b.norm()).item()
