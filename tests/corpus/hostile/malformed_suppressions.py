import torch


def decode(x: torch.Tensor):
    a = x.tolist()  # graphlint: ignore(GL102)
    b = x.tolist()  # graphlint: ignore GL102
    c = x.tolist()  # graphlint: ignore: GL102
    d = x.tolist()  # graphlint: ignore[GL102
    e = x.tolist()  # graphlint: ignroe[GL102]
    f = x.tolist()  # graphlint: ignore[GL102] -- really # noqa: E501
    return a, b, c, d, e, f
