"""Pure parts of the bench domain: CPU lists, core choice, percentiles, Prometheus text,
arrivals, make-model's configs, the sweep script."""

from __future__ import annotations

import random
import shlex
from pathlib import Path

import pytest

from advisor.errors import InputError, UsageError
from advisor.harness.config import llama_params_b
from advisor.harness.load.loadgen import arrival_times, steady_times
from advisor.harness.load.modeldir import ARCHS, llama_config
from advisor.harness.metrics import parse_prometheus, percentile, server_ttft_mean_ms, summarise
from advisor.harness.records import RequestRecord
from advisor.harness.serve.pinning import (
    choose_cores,
    format_cpu_list,
    gpu_numa_cpus,
    parse_cpu_list,
)
from advisor.harness.sweep import SweepConfig, make_sweep, render_script


def test_cpu_lists_round_trip_through_the_kernel_format():
    assert parse_cpu_list("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert format_cpu_list([11, 10, 8, 3, 2, 1, 0]) == "0-3,8,10-11"
    assert format_cpu_list(parse_cpu_list("5")) == "5"


def test_a_bad_cpu_list_is_an_input_error_naming_the_list():
    with pytest.raises(InputError, match="bad CPU list '0-x'"):
        parse_cpu_list("0-x")


def test_engine_and_client_get_disjoint_cores_when_there_is_room():
    split = choose_cores(4, 2, range(16))
    assert split.engine == (0, 1, 2, 3)
    assert split.client == (14, 15)
    assert not split.client_shares_engine_cores


def test_engine_cores_come_from_the_gpus_numa_node_first():
    split = choose_cores(4, 2, range(32), preferred=range(16, 32))
    assert split.engine == (16, 17, 18, 19)
    assert set(split.client).isdisjoint(split.engine)


def test_client_shares_engine_cores_only_when_nothing_is_left():
    split = choose_cores(16, 2, range(16))
    assert split.engine == tuple(range(16))
    assert split.client_shares_engine_cores
    assert set(split.client) <= set(split.engine)


def test_asking_for_more_cores_than_available_names_what_is_there():
    with pytest.raises(UsageError, match=r"--cores 9: only 8 CPUs available here \(0-7\)"):
        choose_cores(9, 1, range(8))


def test_gpu_numa_node_is_read_from_sysfs(tmp_path: Path):
    dev = tmp_path / "bus/pci/devices/0000:19:00.0"
    dev.mkdir(parents=True)
    (dev / "numa_node").write_text("1\n")
    node = tmp_path / "devices/system/node/node1"
    node.mkdir(parents=True)
    (node / "cpulist").write_text("16-31\n")
    assert gpu_numa_cpus(["00000000:19:00.0"], sys_root=str(tmp_path)) == tuple(range(16, 32))
    assert gpu_numa_cpus(["0000:aa:00.0"], sys_root=str(tmp_path)) == ()


def test_percentile_interpolates_like_numpy():
    assert percentile([10.0, 20.0, 30.0, 40.0], 50) == 25.0
    assert percentile([10.0, 20.0, 30.0, 40.0], 90) == pytest.approx(37.0)
    assert percentile([], 50) is None


def _rec(no: int, kind: str, status: str, ttft: float | None) -> RequestRecord:
    return RequestRecord(no, kind, 10, 1, 0.0, None, None, ttft, ttft, status, None)


def test_summary_counts_timeouts_and_errors_and_takes_ttft_of_ok_requests_only():
    recs = [
        _rec(0, "victim", "ok", 10.0),
        _rec(1, "victim", "ok", 30.0),
        _rec(2, "victim", "timeout", None),
        _rec(3, "victim", "error", None),
        _rec(4, "attacker", "ok", 500.0),
    ]
    s = summarise(recs, "victim")
    assert (s.sent, s.ok, s.timeouts, s.errors) == (4, 2, 1, 1)
    assert s.ttft_p50_ms == 20.0


def test_prometheus_text_gives_vllm_samples_and_the_server_side_ttft():
    before = parse_prometheus(
        '# HELP x\nvllm:time_to_first_token_seconds_sum{model_name="m"} 1.5\n'
        'vllm:time_to_first_token_seconds_count{model_name="m"} 10\n'
        'vllm:time_to_first_token_seconds_bucket{le="0.1"} 3\nother_metric 7\n'
    )
    after = parse_prometheus(
        'vllm:time_to_first_token_seconds_sum{model_name="m"} 3.5\n'
        'vllm:time_to_first_token_seconds_count{model_name="m"} 20\n'
    )
    assert "other_metric" not in before
    assert not any("_bucket" in k for k in before)
    assert server_ttft_mean_ms(before, after) == pytest.approx(200.0)


def test_poisson_arrivals_have_the_asked_rate():
    times = arrival_times(8.0, 500.0, random.Random(1))
    assert times == sorted(times) and times[-1] < 500.0
    assert len(times) / 500.0 == pytest.approx(8.0, rel=0.05)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    # exponential gaps: the standard deviation equals the mean
    mean = sum(gaps) / len(gaps)
    sd = (sum((g - mean) ** 2 for g in gaps) / len(gaps)) ** 0.5
    assert sd == pytest.approx(mean, rel=0.1)


def test_victims_arrive_steadily():
    assert steady_times(2.0, 2.0) == [0.25, 0.75, 1.25, 1.75]


def test_llama_8b_config_has_the_published_shape_and_8_billion_parameters(tmp_path: Path):
    cfg = llama_config(ARCHS["llama-3.1-8b"], 128256, 128000, 128001)
    assert (
        cfg["hidden_size"],
        cfg["num_hidden_layers"],
        cfg["num_attention_heads"],
        cfg["num_key_value_heads"],
        cfg["intermediate_size"],
    ) == (4096, 32, 32, 8, 14336)
    assert cfg["rope_scaling"]["rope_type"] == "llama3"
    assert cfg["max_position_embeddings"] == 131072
    import json

    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert llama_params_b(str(tmp_path)) == pytest.approx(8.03, abs=0.01)


def test_sweep_script_runs_one_core_count_per_array_task(tmp_path: Path):
    cfg = SweepConfig(
        model="/models/llama 8b",
        cores=(2, 4, 16),
        out_dir=tmp_path,
        gpus=2,
        gpu_type="h200",
        partition="gpu",
        client_cores=1,
        run_args="--attacker-rps 8,16 --tag '; rm -rf /'",
    )
    text = render_script(cfg)
    assert "#SBATCH --array=0-2" in text
    assert "#SBATCH --gpus=h200:2" in text
    assert "#SBATCH --cpus-per-task=17" in text
    assert "CORES=(2 4 16)" in text
    assert "--model '/models/llama 8b' --tp 2" in text
    # user text reaches the script only quoted: the injected command stays one argument
    exec_line = next(line for line in text.splitlines() if line.startswith("exec "))
    assert shlex.split(exec_line)[-1] == "; rm -rf /"


def test_sweep_submits_once_per_core_count_with_its_own_cpus_per_task(tmp_path: Path):
    result = make_sweep(SweepConfig(model="m", cores=(3, 6), out_dir=tmp_path, client_cores=2))
    assert [c[2:4] for c in result.sbatch_commands] == [
        ("--array=0", "--cpus-per-task=5"),
        ("--array=1", "--cpus-per-task=8"),
    ]
    assert Path(result.script_path or "").read_text() == result.script
    assert result.job_ids == ()


def test_sweep_dry_run_writes_nothing(tmp_path: Path):
    out = tmp_path / "sweep"
    result = make_sweep(SweepConfig(model="m", cores=(3,), out_dir=out, dry_run=True))
    assert "# sbatch --parsable --array=0 --cpus-per-task=4" in result.script
    assert not out.exists()


def test_make_model_tiny_writes_a_llama_dir_whose_tokenizer_round_trips(tmp_path: Path):
    import json

    from tokenizers import Tokenizer

    from advisor.harness.load.modeldir import BOS, EOS, MakeModelConfig, make_model

    made = make_model(MakeModelConfig("tiny", tmp_path))
    cfg = json.loads((tmp_path / "config.json").read_text())
    tok = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert cfg["vocab_size"] == made.vocab_size >= tok.get_vocab_size()
    assert (cfg["bos_token_id"], cfg["eos_token_id"]) == (
        tok.token_to_id(BOS),
        tok.token_to_id(EOS),
    )
    text = "def f(x):\n    return x + 1  # ünïcode\n"
    enc = tok.encode(text)
    assert enc.ids[0] == cfg["bos_token_id"]
    assert tok.decode(enc.ids, skip_special_tokens=True) == text
    assert json.loads((tmp_path / "advisor-model.json").read_text())["name"] == "tiny-llama"
    assert not made.weights_saved and not (tmp_path / "model.safetensors").exists()


def test_make_model_refuses_an_unknown_arch_and_weights_for_a_big_one(tmp_path: Path):
    from advisor.harness.load.modeldir import MakeModelConfig, make_model

    with pytest.raises(UsageError, match="--arch 'gpt-9': unknown; choose one of"):
        make_model(MakeModelConfig("gpt-9", tmp_path))
    with pytest.raises(UsageError, match="--weights with --arch llama-3.1-8b: too large"):
        make_model(MakeModelConfig("llama-3.1-8b", tmp_path / "big", weights=True))
    assert not (tmp_path / "big").exists()
