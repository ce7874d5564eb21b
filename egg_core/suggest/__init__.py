"""``egg policy suggest``: from what an observed run did to egg.yaml entries. The network log's
refusals become allowlist entries (:mod:`~egg_core.suggest.network`); a trace is read into the
writes the sandbox refused (:mod:`~egg_core.suggest.trace`), which are judged into rules or listed
apart with the reason (:mod:`~egg_core.suggest.fs`); ``--apply`` writes them into egg.yaml as text
(:mod:`~egg_core.suggest.apply`), only within what it may write by itself
(:mod:`~egg_core.suggest.scope`)."""
