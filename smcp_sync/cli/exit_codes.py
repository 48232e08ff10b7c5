"""The exit codes of every `smcp-sync` command (its --help epilog lists them)."""

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
