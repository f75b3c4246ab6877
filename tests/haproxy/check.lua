-- SPDX-License-Identifier: MIT
--
-- wrk script for tests/haproxy/run.py: checks every response (status 200,
-- body "Hello, wrk") and prints one machine-readable line at the end with
-- wrk's own counters next to these, so that the harness needs no parsing of
-- wrk's human-readable report (which omits zero error counts).

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  responses = 0
  wrong = 0
end

function response(status, headers, body)
  responses = responses + 1
  if status ~= 200 or body ~= "Hello, wrk" then
    wrong = wrong + 1
  end
end

function done(summary, latency, requests)
  local responses, wrong = 0, 0
  for _, thread in ipairs(threads) do
    responses = responses + thread:get("responses")
    wrong = wrong + thread:get("wrong")
  end
  local e = summary.errors
  io.write(string.format(
    "wrk-check requests=%d responses=%d wrong=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
    summary.requests, responses, wrong, e.connect, e.read, e.write, e.status, e.timeout))
end
