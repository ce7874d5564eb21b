"""The pure parts of the ``macos-seatbelt`` platform: SBPL text and the profile built from a policy.

Nothing here touches the host beyond what the caller injects (a symlink resolver and a file-kind
probe), so the same policy always yields the same profile on any OS; the golden tests rely on it.
"""
