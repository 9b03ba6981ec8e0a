SELECT count(*) FROM tail_fix
