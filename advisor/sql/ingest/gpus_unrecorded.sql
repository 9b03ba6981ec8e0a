-- Whether the rows of ingest $ingest_id look like an accounting database that does not record
-- gres/gpu (AccountingStorageTRES without it): rows with AllocTRES, none of them with a
-- gres/gpu key, and some whose request (ReqTRES, ReqGRES) or submit line asks for GPUs.
-- Returns the count of such asking rows, 0 when AllocTRES does record GPUs. (The EXISTS
-- first: on a GPU cluster it stops at the first row holding a GPU.)
SELECT CASE WHEN EXISTS (SELECT 1 FROM jobs WHERE ingest_id = $ingest_id AND contains(alloc_tres, 'gres/gpu'))
                 OR NOT EXISTS (SELECT 1 FROM jobs WHERE ingest_id = $ingest_id AND alloc_tres IS NOT NULL)
            THEN 0
            ELSE (SELECT count(*) FROM jobs
                  WHERE ingest_id = $ingest_id
                    AND (req_gpus > 0 OR regexp_matches(coalesce(submit_line, ''),
                         '(--gres[= ]\S*gpu|--gpus|--gpus-per-\w+|--gpu[s]?-per-\w+|\s-G\s?\d)')))
       END
