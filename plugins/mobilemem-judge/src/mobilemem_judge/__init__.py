"""The isolated MobileMem judge: the only component that ever sees reference answers and evidence."""
