"""The environments (layer 2: above the rules core, below the players): the observation, the
front-ends' shared decisions and thin shells over the rules. What plays or trains does not belong
here (``patchwork_env.players``, ``agents/``, ``train/``).

====================  =========================================================================
``observation``       the flat observation from one seat: layout, compiled encoder, named views
``edge``              every front-end's edge policy, decided once (finished game, illegal
                      action, seeds, reset options, final reward)
``agent``             the ``Agent`` protocol and ``resolve_opponent`` (a spec, agent or function)
``game_info``         the game's bounds, declared up front
``aec``               the PettingZoo AEC env: two agents, one game
``single_agent``      ``SingleAgentEnv``: one Gymnasium env, one game against an opponent
====================  =========================================================================

The four ``vector`` modules, from the user's side down:

====================  =========================================================================
``vector_env``        ``PatchworkVectorEnv``: the vector env, N single-agent games against an
                      opponent as one ``gymnasium.vector.VectorEnv`` (rewards, autoreset, infos)
``vector``            ``VectorGames``: the vector engine, N two-player games stepped together by
                      whoever is to move (self-play); no opponent, no rewards, no Gymnasium API
``vector_kernels``    the compiled batch kernels under both: whole steps of all games in one call
``vector_threads``    the helper threads that run a kernel over row chunks on several cores
====================  =========================================================================
"""
