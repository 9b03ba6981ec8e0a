-- ratios/interactive_labels: the interactive labels of a people cube's ({{cube}}) counted jobs.
SELECT DISTINCT interactive FROM {{cube}} WHERE excluded_reason IS NULL ORDER BY 1
