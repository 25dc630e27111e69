"""engine.nets.cudagraphs on any machine: the padded batch sizes and the refusal off CUDA (the graphs
themselves are tested in tests/nets/test_cuda.py)."""
import pytest

from engine.nets.cudagraphs import MIN_BUCKET, bucket
from engine.nets.evaluator import TorchEvaluator
from engine.nets.network import GoNet, NetConfig


def test_buckets_pad_at_most_a_quarter_and_are_few():
    assert [bucket(b) for b in (1, 16, 17, 33, 100, 257, 512, 513, 2049)] == [16, 16, 32, 48, 112, 320, 512, 640, 2560]
    sizes = set()
    for b in range(1, 4097):
        p = bucket(b)
        assert p >= b and p % MIN_BUCKET == 0
        assert b < 4 * MIN_BUCKET or (p - b) / b < 0.25      # from 64 rows up
        sizes.add(p)
    assert len(sizes) <= 4 * 9                          # four a power of two up to 4,096
    with pytest.raises(ValueError):
        bucket(0)


def test_cuda_graphs_are_refused_off_cuda():
    with pytest.raises(ValueError, match="CUDA graphs need a CUDA device"):
        TorchEvaluator(GoNet(NetConfig(blocks=1, filters=8)), device="cpu", cuda_graphs=True)
