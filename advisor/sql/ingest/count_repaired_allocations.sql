SELECT count(*) FROM parsed WHERE repaired AND step IS NULL
