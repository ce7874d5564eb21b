"""Privileged host tools: what a tool is (:mod:`~egg_core.tools.model`), running one on the host
(:mod:`~egg_core.tools.runner`), the tool socket that takes calls from inside a sandbox
(:mod:`~egg_core.tools.server`) and the client a sandbox calls it with
(:mod:`~egg_core.tools.client`)."""
