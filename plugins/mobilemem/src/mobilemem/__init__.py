"""MobileMem-Omni dataset, run-directory records and the ReMe Image candidate.

Importing this package loads nothing heavy: import the submodules you need."""
