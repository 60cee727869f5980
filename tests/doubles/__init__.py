"""Test doubles: stand-ins for servers that cannot run here."""
