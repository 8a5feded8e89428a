import torch

def decode(x: torch.Tensor):
    ﻿return x.item()
