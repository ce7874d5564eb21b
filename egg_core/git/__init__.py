"""What egg does about git repositories a sandbox could write, before the host's git reads them:
where a repository's git directory is (:mod:`~egg_core.git.layout`), the guard that plans and
audits them (:mod:`~egg_core.git.guard`), and what it checks — the config keys that run programs
(:mod:`~egg_core.git.config`), the index (:mod:`~egg_core.git.index`) and the pointer files
(``.git`` files, ``commondir``, alternates: :mod:`~egg_core.git.pointers`)."""
