-- Remove one calibration point by its id (an imported point replaces its earlier import).
DELETE FROM calibration WHERE point_id = $point_id;
