import pytest
import torch

from dsv4.config import get_config
from dsv4.model import DSV4Model


@pytest.fixture(scope="session")
def tiny_model() -> DSV4Model:
    torch.set_num_threads(1)  # the CI box has 2 cores shared with other jobs
    return DSV4Model(get_config("tiny"), seed=0)


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(1234)
