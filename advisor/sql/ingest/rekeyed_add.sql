INSERT INTO rekeyed VALUES (?, ?, ?)
