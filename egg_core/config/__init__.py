"""egg.yaml: its model (:mod:`~egg_core.config.model`: frozen attrs data, the built-in defaults,
merging), reading one file strictly (:mod:`~egg_core.config.parsing`: every problem one line with
the file, line and key) and finding the chain of files with their bases
(:mod:`~egg_core.config.files`, what the rest of egg calls)."""
