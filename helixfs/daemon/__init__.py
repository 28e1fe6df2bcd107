"""The mount daemon: one process per store owning the Repository, the FUSE loop (trio)
and the control socket. `lifecycle` runs a mount, `background` forks it with a readiness
pipe, `control` carries CLI command lines to it, `lock` keeps it to one per store."""
