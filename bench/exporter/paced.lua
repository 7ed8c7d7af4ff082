-- wrk script: each connection waits 10 ms between requests (about 100 requests/s per connection),
-- so latency is measured without the queueing of a saturated closed loop; a Prometheus server
-- scrapes an exporter about once a second.
function delay()
  return 10
end
