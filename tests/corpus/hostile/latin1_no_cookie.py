import torch
s = 'café'
