-- Lines the usage check (bulk.py: _usage_faults) found with an implausible usage value.
SELECT count(*) FROM usage_check
