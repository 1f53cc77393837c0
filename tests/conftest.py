"""Shared fixtures for every test folder."""

pytest_plugins = ["tests.support.fixtures"]
