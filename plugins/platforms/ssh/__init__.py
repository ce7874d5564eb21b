"""ssh inside a sandbox whose network is filtered, for every platform that filters it: the
route through egg's proxy (:mod:`.route`, :mod:`.connect`), the allowed hosts' known_hosts
lines (:mod:`.route`) and the filtered agent's wiring (:mod:`.agent`). Each platform puts the
route where its ssh finds it (linux-ns binds a system config over ``/etc/ssh/ssh_config``;
macos-seatbelt puts ``ssh``, ``scp`` and ``sftp`` first on ``PATH``)."""
