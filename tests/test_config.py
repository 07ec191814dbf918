"""Trainer configs: the shipped YAML files load, the command line overrides them, every field is
documented in --help, and malformed configs fail naming the field (train.config, train.cli)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from patchwork_env.core.bounds import above, bounded
from patchwork_env.players.net_config import NetConfig
from train.cli import from_dict, load_yaml, one_line, parse_args, parse_config, reports_input_errors
from train.config import (
    AlphaZeroConfig,
    CommonConfig,
    ConfigError,
    DistillConfig,
    ExItConfig,
    RLlibConfig,
    SB3Config,
    SelfPlayConfig,
)
from train.run import to_yaml

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"
SHIPPED = sorted(p.name for p in CONFIGS.glob("*.yaml"))
TRAINERS: dict[str, type[CommonConfig]] = {
    "selfplay": SelfPlayConfig,
    "distill": DistillConfig,
    "alphazero": AlphaZeroConfig,
    "exit": ExItConfig,
    "sb3_maskable": SB3Config,
    "rllib_selfplay": RLlibConfig,
}


def config_class(name: str) -> type[CommonConfig]:
    """The trainer a shipped config is for: the command in its header says."""
    header = (CONFIGS / name).read_text().splitlines()
    trainer = next(line.split("python -m train.")[1].split()[0] for line in header if "python -m train." in line)
    return {**TRAINERS, "demo": DistillConfig}[trainer]  # train.demo runs train.distill on its config


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_configs_load_and_round_trip(name: str) -> None:
    cls = config_class(name)
    cfg = load_yaml(cls, CONFIGS / name)
    cfg.validate()
    assert from_dict(cls, yaml.safe_load(to_yaml(cfg)), "round trip") == cfg
    header = [line for line in (CONFIGS / name).read_text().splitlines() if line.startswith("#")]
    assert 1 <= len(header) <= 4  # what it is for, and its command: history lives in the changelog


@pytest.mark.parametrize("cls", TRAINERS.values())
def test_every_field_is_in_help_with_its_docstring(cls: type[CommonConfig]) -> None:
    out = subprocess.run(
        [sys.executable, "-c", f"from train.cli import parse_config; from train.config import {cls.__name__} as C; "
         "parse_config(C, ['--help'])"],
        capture_output=True, text=True, cwd=ROOT, env={"COLUMNS": "200", "PATH": ""},
    ).stdout  # fmt: skip
    for f in dataclasses.fields(cls):
        if f.name == "net":
            assert "--net.channels" in out and "Channels of the convolutional trunk" in out
        elif f.name != "eval_opponents":
            assert f"--{f.name.replace('_', '-')}" in out, f.name


def test_command_line_overrides_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("num_games: 16\nlearning_rate: 1e-3\nnet: {channels: 8}\n")
    cfg, name = parse_config(SelfPlayConfig, ["--config", str(path), "--rollout-steps", "8", "--no-anneal-lr",
                                              "--net.blocks", "1", "--learning_rate", "0.002"])  # fmt: skip
    assert name == "c"
    assert (cfg.num_games, cfg.rollout_steps, cfg.anneal_lr, cfg.learning_rate) == (16, 8, False, 0.002)
    assert cfg.net == NetConfig(channels=8, blocks=1)
    assert parse_config(SelfPlayConfig, [])[1] == "selfplay"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"num_gmaes": 8}, r'can not match "num_gmaes"'),
        ({"num_games": "many"}, r'"num_games" - should be "int"'),
        ({"num_games": 8.5}, r'"num_games" - should be "int"'),
        ({"anneal_lr": "yes please"}, r'"anneal_lr" - should be "bool"'),
        ({"eval_opponents": ["greedy"]}, r'"eval_opponents" - should be "dict'),
        ({"final_eval_opponents": "greedy"}, r'"final_eval_opponents" - should be "list'),
        ({"net": {"channels": "x"}}, r'"net.channels" - should be "int"'),
        ({"net": {"chanels": 8}}, r'can not match "chanels"'),
        ({"update_epochs": 2}, r"update_epochs is now called epochs"),
        ({"clip_range": 0.2}, r"clip_range is now called clip_coef"),
    ],
)
def test_a_file_with_wrong_keys_or_types_names_them(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict(SelfPlayConfig, data, "c.yaml")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"num_games": True}, r"num_games must be a number, got True"),
        ({"learning_rate": float("nan")}, r"learning_rate must be a finite number"),
        ({"learning_rate": -1e-3}, r"learning_rate must be > 0"),
        ({"num_games": 0}, r"num_games must be in \[1, 65536\]"),
        ({"num_games": 2**31 - 1}, r"num_games must be in \[1, 65536\]"),
        ({"num_games": 4096, "rollout_steps": 4096}, r"num_games \* rollout_steps must be <= 2097152"),
        ({"latest_prob": 1.5}, r"latest_prob must be in \[0, 1\]"),
        ({"torch_threads": 10**9}, r"torch_threads must be in \[1, 256\]"),
        ({"pool_size": 0}, r"pool_size must be >= 1 when snapshot_weight > 0"),
        ({"random_weight": 0, "greedy_weight": 0, "snapshot_weight": 0}, r"at least one must be positive"),
        ({"eval_opponents": {"greedy": 0}}, r"eval_opponents\['greedy'\] must be in 1\.\.1000000 pairs"),
        ({"num_games": 2, "rollout_steps": 2, "num_minibatches": 8}, r"num_minibatches \(8\) is too large"),
        ({"total_updates": 5, "critic_warmup_updates": 5}, r"the policy would never train"),
        ({"checkpoint_minutes": [10, -1]}, r"checkpoint_minutes must be at most 100 numbers in \(0, 1e6\]"),
        ({"run_dir": "a\\b"}, r"run_dir may hold letters, digits and \._-/"),
        ({"run_dir": "../up"}, r"no '\.\.'"),
        ({"clock": "cpu"}, r"clock must be one of wall, process, got 'cpu'"),
        ({"net": {"blocks": 100_000}}, r"net\.blocks must be in \[1, 32\], got 100000"),
        ({"net": {"channels": 4096}}, r"net\.channels must be in \[1, 512\]"),
        ({"ent_coef": float("inf")}, r"ent_coef must be a finite number, got inf"),
        ({"eval_opponents": {"greedy": True}}, r"eval_opponents\['greedy'\] must be in 1\.\.1000000 pairs"),
    ],
)
def test_impossible_values_name_the_field_and_the_bound(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict(SelfPlayConfig, data, "test").validate()


def test_validation_builds_no_agent_and_reads_no_checkpoint() -> None:
    # values only: a spec that does not build and a missing checkpoint are the run's to report
    from_dict(SelfPlayConfig, {"eval_opponents": {"gredy": 1}, "init_checkpoint": "/no/such.pt"}, "t").validate()


def test_yaml_files_that_are_not_configs(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    for text, message in (("- a\n- b\n", "must hold a mapping"), ("num_games: [1\n", "not valid YAML"),
                          ("3\n", "must hold a mapping")):  # fmt: skip
        path.write_text(text)
        with pytest.raises(ConfigError, match=message):
            load_yaml(SelfPlayConfig, path)
    with pytest.raises(ConfigError, match="config file not found"):
        load_yaml(SelfPlayConfig, tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="not a regular file"):
        load_yaml(SelfPlayConfig, tmp_path)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--num-gmaes", "3"], r"Unrecognized options: --num-gmaes, 3 \(did you mean --num-games\?\)"),
        (["--num-games", "x"], r"Error parsing --num-games: invalid literal"),
        (["--seed"], r"Missing value for argument '--seed'"),
        (["--num-games", "0"], r"num_games must be in \[1, 65536\]"),
    ],
)
def test_command_line_errors_are_one_line(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse_config(SelfPlayConfig, argv)
    assert "\n" not in str(info.value)


def test_one_line_of_an_empty_message() -> None:
    assert one_line("") == "invalid arguments (see --help)"


@pytest.mark.parametrize("cls", TRAINERS.values())
def test_every_trainer_documents_its_step(cls: type[CommonConfig]) -> None:
    # the *_every fields count the trainer's own step, which its docstring names
    assert "step is" in (cls.__doc__ or "") or cls is DistillConfig
    for f in dataclasses.fields(cls):
        if f.name.endswith("_every"):
            assert f.default is not dataclasses.MISSING


def test_the_configs_copies_of_the_engines_sizes_are_the_engines() -> None:
    """train.config keeps the engine's sizes as numbers (its memory estimates run before the engine
    loads); its comment promised a test, which did not exist (issue 40): here it is."""
    from patchwork_env.core import rules
    from patchwork_env.envs.observation import OBS_DIM
    from patchwork_env.players.heuristic import NUM_FEATURES
    from train import config

    assert (config.OBS_DIM, config.NUM_ACTIONS, config.STATE_LEN, config.PRIOR_FEATURES) == (
        OBS_DIM,
        rules.NUM_ACTIONS,
        rules.STATE_LEN,
        NUM_FEATURES,
    )
    from patchwork_env.cli import common

    # one bound for a run's seed and one for an evaluation's pairs, on every command line
    assert (config.MAX_SEED, config.MAX_PAIRS) == (common.MAX_SEED, common.MAX_PAIRS)


@pytest.mark.parametrize("cls", [DistillConfig, ExItConfig, AlphaZeroConfig])
def test_every_trainer_with_parallel_work_names_its_backend(cls: type[CommonConfig]) -> None:
    """One name for where the work runs (it was ``label_backend`` in ExIt, ``selfplay_backend`` in
    AlphaZero): ``backend``, with ``address`` accepted only with ``backend=ray``."""
    with pytest.raises(ConfigError, match=r"backend must be one of local, ray, got 'dask'"):
        from_dict(cls, {"backend": "dask"}, "c.yaml").validate()
    with pytest.raises(ConfigError, match=r"address needs backend=ray"):
        from_dict(cls, {"address": "auto"}, "c.yaml").validate()
    with pytest.raises(ConfigError, match=r"is now called backend"):
        from_dict(cls, {"label_backend" if cls is ExItConfig else "selfplay_backend": "ray"}, "c.yaml")


def test_search_settings_are_one_nested_group_with_the_searchs_bounds() -> None:
    """ExIt and AlphaZero declare no search setting of their own: ``search:`` is the search's
    ``SearchConfig`` (bounds and all); the old top-level names are refused with the new one, and a
    name that was never a field of the trainer stays an unknown key."""
    cfg = from_dict(AlphaZeroConfig, {"search": {"sims": 8, "root": "puct", "margin_weight": 0.5}}, "c.yaml")
    assert (cfg.search.sims, cfg.search.root, cfg.search.considered, cfg.search.margin_weight) == (8, "puct", 16, 0.5)
    for cls, bad, message in [
        (AlphaZeroConfig, {"search": {"root": "best"}}, r"search\.root must be one of gumbel, puct, got 'best'"),
        (ExItConfig, {"search": {"c_puct": -1.0}}, r"search\.c_puct must be in \[0, 100\], got -1\.0"),
        (ExItConfig, {"search": {"sims": 50}, "unsure_sims": 50}, r"unsure_sims must be in \[51, 100000\]"),
    ]:
        with pytest.raises(ConfigError, match=message):
            from_dict(cls, bad, "c.yaml").validate()
    with pytest.raises(ConfigError, match=r"sims is now called search\.sims"):
        from_dict(ExItConfig, {"sims": 100}, "c.yaml")
    with pytest.raises(ConfigError, match=r"reward_margin_weight is now called search\.margin_weight"):
        from_dict(AlphaZeroConfig, {"reward_margin_weight": 0.2}, "c.yaml")
    assert from_dict(SelfPlayConfig, {"reward_margin_weight": 0.2}, "c.yaml").reward_margin_weight == 0.2
    with pytest.raises(ConfigError, match=r'can not match "sims"'):
        from_dict(DistillConfig, {"sims": 100}, "c.yaml")


def test_the_experts_settings_are_declared_once_and_exit_labels_with_its_config() -> None:
    """Expert iteration's labelling settings are one type (``agents.expert.SearchSettings``: the
    search's ``SearchConfig`` and how labels are made), which ``ExItConfig`` derives from: no field
    declared twice, the same defaults and bounds, and the config itself is what the labelling reads."""
    from agents.expert import SearchSettings

    own = {f.name for f in dataclasses.fields(SearchSettings)}
    assert issubclass(ExItConfig, SearchSettings) and not own & set(vars(ExItConfig)["__annotations__"])
    cfg = ExItConfig()
    assert cfg.search == SearchSettings().search and cfg.search_config() is cfg.search
    with pytest.raises(ValueError, match=r"rollouts must be in \[1, 1000\], got 0"):
        SearchSettings(rollouts=0).search_config()
    with pytest.raises(ConfigError, match=r"rollouts must be in \[1, 1000\], got 0"):
        from_dict(ExItConfig, {"rollouts": 0}, "c.yaml").validate()


def test_preflight_checks_the_config_before_anything_is_built() -> None:
    """Every trainer's first step (``train.run.preflight``) validates its config: a trainer's
    ``main`` given an impossible config stops there, with the field named."""
    from train.run import preflight

    with pytest.raises(ConfigError, match=r"num_games must be in"):
        preflight(dataclasses.replace(SelfPlayConfig(), num_games=0))


@dataclasses.dataclass
class _Options:
    """A command's options, declared as the commands of ``train/`` declare theirs."""

    eval_seed: int = bounded(0, 0, 9)
    marks: tuple[float, ...] = above((1.0,), 0.0, 10.0)
    seeds: tuple[int, ...] | None = bounded(None, 0, 9)
    jobs: int = bounded(1, 1, 4)

    def validate(self) -> None:
        if self.seeds is not None and self.jobs > len(self.seeds):
            raise ConfigError(f"--jobs must be at most the number of seeds, got {self.jobs}")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--eval-seed", "10"], "error: --eval-seed must be in [0, 9], got 10"),  # named as its option
        (["--marks", "1", "0"], "error: --marks must be > 0 and <= 10, got 0.0"),  # each value of a tuple
        (["--seeds", "1", "-1"], "error: --seeds must be in [0, 9], got -1"),
        (["--seeds", "1", "--jobs", "2"], "error: --jobs must be at most the number of seeds, got 2"),  # validate
        (["--jbos", "2"], "error: Unrecognized options: --jbos 2 (see --help)"),
    ],
)
def test_a_commands_options_are_checked_as_a_config_is(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``train.cli.parse_args``: every option within its declared bounds, then the command's
    ``validate``; a bad one is one ``error:`` line and exit code 2."""
    assert parse_args(_Options, ["--seeds", "1", "2", "--jobs", "2"]) == _Options(seeds=(1, 2), jobs=2)
    assert parse_args(_Options, []).seeds is None  # an option left unset is not checked
    with pytest.raises(SystemExit) as exc:
        parse_args(_Options, argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [message]


def test_a_commands_input_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """``train.cli.reports_input_errors``: an input error raised inside a command's ``main`` ends
    it with one ``error:`` line and exit code 2; any other error keeps its traceback."""

    @reports_input_errors
    def main(error: Exception) -> int:
        raise error

    with pytest.raises(SystemExit) as exc:
        main(ConfigError("runs/x is not a finished run\nof train.exit"))
    assert exc.value.code == 2 and capsys.readouterr().err == "error: runs/x is not a finished run\n"
    with pytest.raises(ZeroDivisionError):
        main(ZeroDivisionError("a bug"))
