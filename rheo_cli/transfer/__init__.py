"""Reading and writing files of conversations: rheo's own export (JSON Lines), and the place
where importers of other tools' histories are added (see `formats`)."""
