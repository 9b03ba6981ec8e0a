SELECT count(*) FROM dupkeys
