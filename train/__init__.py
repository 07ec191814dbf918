"""The trainers (research code, run from a checkout: ``python -m train.X``): one trainer per file,
readable top to bottom.

What belongs here: a trainer's step around the algorithms of ``agents/``, its config
(``train.config``, one dataclass per trainer), its command line (``train.cli``) and the pieces every
trainer shares (``train.loop``, ``train.run``: the run folder, time limit, evaluations,
checkpoints, resume, report, on what a trainer learns behind ``train.artefact``: a network or
``train.alphazero``'s search model), plus the scripts that run trainers over seeds and measure them
(``train.demo``, ``train.baselines``, ``train.exit_results``, ``train.alphazero_results``). What
does not: learning code a trainer's step calls (``agents/``) and anything needed to play or rate an
agent (``patchwork_env``).
"""
