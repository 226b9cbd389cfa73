"""Two gloo processes on 127.0.0.1 train a tiny transformers GPT-2 under
DDP and under FSDP2 (fully_shard on CPU), unfused and fused
(dist_hf_worker.py): fused before wrapping, and under FSDP2 also fused
after sharding. Every fused run matches the unfused one: the global loss
of each step, the first step's gradients (against the model's largest
gradient) and the parameters after training; the ranks stay in sync; and
the fused run's step runs our ops."""
import os
import socket

import pytest
import torch
import torch.multiprocessing as mp

import dist_hf_worker

STEPS = 4
TOL = 1e-5
FUSED_RUNS = [(how, fuse) for how, fuse in dist_hf_worker.RUNS if fuse]
IDS = [f"{how}-fuse_{fuse}" for how, fuse in FUSED_RUNS]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist_hf")
    mp.spawn(dist_hf_worker.run, args=(2, free_port(), str(out), STEPS),
             nprocs=2, join=True)
    return [torch.load(os.path.join(out, f"rank{i}.pt")) for i in range(2)]


def _close(got, want, scale, what):
    err = float((got - want).abs().max())
    assert err <= TOL * scale, f"{what}: {err:.3g} > {TOL} * {scale:.3g}"


def _runs(results, how, fuse):
    r0, r1 = results
    for run in (f"{how}_ref", f"{how}_{fuse}"):
        assert "error" not in r0[run], r0[run].get("error")
        assert r0[run]["losses"] == r1[run]["losses"], run  # all-reduced
    return r0[f"{how}_ref"], r0[f"{how}_{fuse}"], r1[f"{how}_{fuse}"]


@pytest.mark.parametrize("how,fuse", FUSED_RUNS, ids=IDS)
def test_fused_trains_as_unfused(results, how, fuse):
    ref, fused, fused_rank1 = _runs(results, how, fuse)
    assert fused["sharded"] == ref["sharded"] == (how == "fsdp2")
    assert len(ref["losses"]) == STEPS
    assert ref["losses"][-1] < ref["losses"][0]  # it trained
    for step, (a, b) in enumerate(zip(ref["losses"], fused["losses"])):
        assert abs(b - a) <= TOL * abs(a), f"{how} step {step}: {b} vs {a}"
    assert ref["grads"].keys() == fused["grads"].keys()
    scale = max(float(g.abs().max()) for g in ref["grads"].values())
    for k, g in ref["grads"].items():
        _close(fused["grads"][k], g, scale, f"{how} grad {k}")
    for k, p in ref["params"].items():
        _close(fused["params"][k], p, float(p.abs().max()), f"{how} param {k}")
        # the replicas (or the gathered shards) agree across ranks
        torch.testing.assert_close(fused_rank1["params"][k], fused["params"][k],
                                   rtol=0, atol=0)


@pytest.mark.parametrize("how,fuse", FUSED_RUNS, ids=IDS)
def test_fused_run_runs_our_ops(results, how, fuse):
    ref, fused, _ = _runs(results, how, fuse)
    assert not ref["ops"]
    assert fused["ops"], f"{how}: the fused model ran none of gelu_fusion's ops"
