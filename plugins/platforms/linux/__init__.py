"""Parts of the linux-ns platform: bwrap arguments, seccomp, cgroups, the network bridge."""
