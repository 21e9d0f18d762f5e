"""The store: opening the database, migrations, settings, errors, time helpers, profiles.

The one seam a second database plugs into: the rest of the engine asks the store for a
connection and a write transaction, never the driver.
"""
