-- tests/lib/harness.lua: what the standalone Lua tests share: a pass/fail tally, file reading,
-- hex, a memoised SHA-256, and comparison of bytes with a manifest blob ({length, hex|sha256}).

local sha256_raw = require("sha256")

local M = { passed = 0, failed = 0 }

function M.check(ok, what)
    if ok then
        M.passed = M.passed + 1
    else
        M.failed = M.failed + 1
        print("FAIL " .. what)
    end
end

function M.read(path)
    local f = assert(io.open(path, "rb"))
    local s = f:read("*a")
    f:close()
    return s
end

function M.hex(s)
    return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

local sha_memo = {}
function M.sha256(data)  -- the same large contents are compared many times
    local h = sha_memo[data]
    if h == nil then h = sha256_raw(data); sha_memo[data] = h end
    return h
end

function M.same(blob, data)
    if blob.length ~= #data then return false end
    if blob.hex then return blob.hex == M.hex(data) end
    return blob.sha256 == M.sha256(data)
end

-- Prints "<label> (<Lua version>): N passed, M failed" and exits 0 only if nothing failed.
function M.finish(label)
    print(string.format("%s (%s): %d passed, %d failed", label, _VERSION, M.passed, M.failed))
    os.exit(M.failed == 0 and 0 or 1)
end

return M
