"""The `gnmt-tf` command line."""
