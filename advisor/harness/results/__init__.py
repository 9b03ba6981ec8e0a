"""What a bench run leaves: series identity, curves and knees read from run files, their
collection into the database and calibration points, and the other tools' result formats
(``foreign``, ``llmd``)."""
