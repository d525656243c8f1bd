"""The commands' exit statuses (DESIGN §8)."""

COMPLETED = 0
REFUSED = 1  # refused to start, or a usage error
CLEANUP_ERRORS = 2
STOPPED_BY_ERROR = 3  # a full disk, a failed orchestration: every finished result kept
NOTHING_SCORED = 4  # completed with no question scored
INTERRUPTED = 130
FINISHED = (COMPLETED, CLEANUP_ERRORS, NOTHING_SCORED)  # a run that ended by itself, scored or not
