"""Exports of the repository to other serving engines: Triton model repositories and KServe manifests."""
