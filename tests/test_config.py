"""Trainer configs: the shipped YAML files load, and malformed configs fail naming the key."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from agents.network import NetConfig
from train.config import (
    AlphaZeroConfig,
    ConfigError,
    RLlibConfig,
    SB3Config,
    SelfPlayConfig,
    describe,
    field_docs,
    from_dict,
    load_config,
    parse_overrides,
    to_yaml,
)
from train.exit import ExItConfig

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


SHIPPED = sorted(p.name for p in CONFIGS.glob("*.yaml"))


def test_every_shipped_config_is_tested() -> None:
    assert SHIPPED == [
        "alphazero.yaml",
        "alphazero_smoke.yaml",
        "dagger.yaml",
        "exit.yaml",
        "quick.yaml",
        "quick_dagger.yaml",
        "quick_scratch.yaml",
        "rllib.yaml",
        "rllib_prior.yaml",
        "rllib_smoke.yaml",
        "sb3.yaml",
        "selfplay.yaml",
        "selfplay_scratch.yaml",
    ]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_configs_load(name: str) -> None:
    kinds: dict[str, type] = {
        "sb3": SB3Config,
        "rllib": RLlibConfig,
        "alphazero": AlphaZeroConfig,
        "exit": ExItConfig,
    }
    cls = next((kind for prefix, kind in kinds.items() if name.startswith(prefix)), SelfPlayConfig)
    cfg = load_config(CONFIGS / name, cls)
    assert isinstance(cfg, cls)
    # the resolved YAML round-trips to the same config
    assert from_dict(cls, __import__("yaml").safe_load(to_yaml(cfg))) == cfg


@pytest.mark.parametrize("cls", [SelfPlayConfig, SB3Config, RLlibConfig, AlphaZeroConfig])
def test_every_field_has_a_docstring(cls: type) -> None:
    docs = field_docs(cls)
    missing = [f.name for f in dataclasses.fields(cls) if not docs.get(f.name)]
    assert not missing
    assert "num_games" in describe(SelfPlayConfig)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"num_gmaes": 8}, r"unknown key 'num_gmaes'.*did you mean num_games"),
        ({"zzz": 1}, r"unknown key 'zzz'.*known keys: run_name"),
        ({"num_games": "many"}, r"num_games must be int, got str 'many'"),
        ({"num_games": 8.5}, r"num_games must be int, got float"),
        ({"num_games": True}, r"num_games must be int, got bool"),
        ({"anneal_lr": "yes please"}, r"anneal_lr must be bool"),
        ({"learning_rate": "fast"}, r"learning_rate must be float"),
        ({"eval_opponents": ["greedy"]}, r"eval_opponents must be dict"),
        ({"eval_opponents": {"greedy": "ten"}}, r"eval_opponents\['greedy'\] must be int"),
        ({"final_eval_opponents": "greedy"}, r"final_eval_opponents must be list"),
        ({"learning_rate": -1e-3}, r"learning_rate must be > 0"),
        ({"num_games": 0}, r"num_games must be >= 1"),
        ({"latest_prob": 1.5}, r"latest_prob must be in \[0.0, 1.0\]"),
        ({"gamma": 2}, r"gamma must be in"),
        ({"pool_size": 0}, r"pool_size must be >= 1 when snapshot_weight > 0"),
        ({"random_weight": 0, "greedy_weight": 0, "snapshot_weight": 0}, r"at least one must be positive"),
        ({"eval_opponents": {"gredy": 10}}, r"eval_opponents: unknown agent 'gredy'"),
        ({"eval_opponents": {"mcts:simz=5": 10}}, r"eval_opponents:.*no parameter 'simz'"),
        ({"eval_opponents": {"greedy": 0}}, r"eval_opponents\['greedy'\] must be a positive"),
        ({"final_eval_opponents": ["bogus"]}, r"final_eval_opponents: unknown agent"),
        ({"num_games": 2, "rollout_steps": 2, "num_minibatches": 8}, r"num_minibatches \(8\) is too large"),
        ({"run_name": "a/b"}, r"run_name must be a plain folder name"),
    ],
)
def test_selfplay_config_errors_name_the_key(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict(SelfPlayConfig, data)


def test_sb3_config_errors() -> None:
    with pytest.raises(ConfigError, match=r"batch_size \(4096\) must be at most n_envs \* n_steps"):
        from_dict(SB3Config, {"batch_size": 4096, "n_envs": 2, "n_steps": 64})
    with pytest.raises(ConfigError, match="unknown key 'num_games'"):
        from_dict(SB3Config, {"num_games": 8})


def test_yaml_files_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("num_games: 16\nlearning_rate: 1e-3\n")  # PyYAML reads 1e-3 as a string: accepted
    cfg = load_config(path, SelfPlayConfig, ["rollout_steps=8", "anneal_lr=false", "eval_opponents={random: 3}"])
    assert (cfg.num_games, cfg.learning_rate, cfg.rollout_steps, cfg.anneal_lr) == (16, 1e-3, 8, False)
    assert cfg.eval_opponents == {"random": 3}
    path.write_text("num_games: -4\n")
    with pytest.raises(ConfigError, match="num_games must be >= 1"):
        load_config(path, SelfPlayConfig)
    path.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_config(path, SelfPlayConfig)
    path.write_text("num_games: [1\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path, SelfPlayConfig)
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml", SelfPlayConfig)
    with pytest.raises(ConfigError, match="must look like key=value"):
        parse_overrides(["num_games"])
    with pytest.raises(ConfigError, match=r"unknown key 'bogus' \(from the command line\)"):
        load_config(None, SelfPlayConfig, ["bogus=1"])


def test_a_given_key_replaces_its_default_whole() -> None:
    # OmegaConf merges mappings by default: a config naming one opponent must not keep the defaults'
    cfg = from_dict(SelfPlayConfig, {"eval_opponents": {"greedy": 5}, "final_eval_opponents": ["greedy"]})
    assert cfg.eval_opponents == {"greedy": 5}
    assert cfg.final_eval_opponents == ["greedy"]


def test_yaml_integers_for_float_keys_and_override_grammar() -> None:
    cfg = load_config(None, SelfPlayConfig, ["time_limit_minutes=8", "eval_opponents={random: 3}", "run_name="])
    assert isinstance(cfg.time_limit_minutes, float) and cfg.time_limit_minutes == 8.0
    assert cfg.eval_opponents == {"random": 3}
    assert cfg.run_name == ""


@pytest.mark.parametrize("cls", [SelfPlayConfig, SB3Config, RLlibConfig, AlphaZeroConfig])
def test_network_keys_are_netconfig_fields(cls: type) -> None:
    # one definition of the network's sizes: the flat keys are NetConfig's fields, with its
    # defaults, types and docs, in its order right after `progress`
    net = [f.name for f in dataclasses.fields(NetConfig)]
    names = [f.name for f in dataclasses.fields(cls)]
    at = names.index("progress") + 1
    assert names[at : at + len(net)] == net
    assert cls().net_config() == NetConfig()
    hints, net_hints = typing.get_type_hints(cls), typing.get_type_hints(NetConfig)
    assert all(hints[name] is net_hints[name] for name in net)
    docs = field_docs(cls)
    assert docs["blocks"] == "Network: residual blocks (two 3x3 convolutions each) in the trunk."
    cfg = load_config(None, cls, ["channels=8", "blocks=1", "geometry=false"])
    assert cfg.net_config() == NetConfig(channels=8, blocks=1, geometry=False)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"channels": 0}, r"^channels must be a positive integer, got 0$"),
        ({"head_hidden": -3}, r"^head_hidden must be a positive integer, got -3$"),
        ({"prior_scale": 5000.0}, r"^prior_scale must be a number in \[0, 1000\]"),
        ({"geometry": "maybe"}, r"geometry must be bool"),
    ],
)
def test_network_key_errors_are_netconfigs(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict(SelfPlayConfig, data)


@pytest.mark.parametrize("cls", [SelfPlayConfig, SB3Config, RLlibConfig, AlphaZeroConfig])
def test_periodic_keys_name_the_trainers_unit(cls: type) -> None:
    # each trainer's *_every keys count its run length's unit, and every one of them says so
    unit, length = cls.period_unit
    names = [f.name for f in dataclasses.fields(cls)]
    assert length in names and "period_unit" not in names
    docs = field_docs(cls)
    every = [name for name in names if name.endswith("_every")]
    assert "eval_every" in every and "checkpoint_every" in every
    for name in every:
        assert docs[name].startswith(f"{unit.capitalize()} (the unit of ``{length}``) between"), name
    assert f"*_every keys count {unit} (as {length} does)" in describe(cls)
