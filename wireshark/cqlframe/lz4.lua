-- cqlframe/lz4.lua: raw LZ4 block decompression (LZ4-1, LZ4-4, LZ4-6), pure Lua, bounds-checked.
--
--   decompress(s, i, n, declared) -> content | nil, kind, reason
--
-- s[i .. i+n-1] is one raw block (no frame format, no size prefix, empty history); declared is the
-- header's uncompressed length. Success means the block is consumed exactly and yields exactly
-- `declared` bytes; the output never grows past `declared`. On failure kind is "lz4_malformed" or
-- "lz4_length_mismatch" (both LZ4-4, the sender's rule LZ4-1, as the reference reports them), or
-- "lz4_end_of_block" (LZ4-6) for a block that yields `declared` bytes but whose last match starts
-- less than 12 or ends less than 5 bytes before the end (LZ4's end-of-block rules, LZ4-5). Only
-- arithmetic on small integers: no bit operations needed.

local byte, char, concat = string.byte, string.char, table.concat
local unpack = table.unpack or unpack

local M = {}

local CHUNK = 4096  -- bytes per string.char call when building the result

local function to_string(out, n)
    local parts, p = {}, 0
    for k = 1, n, CHUNK do
        p = p + 1
        local last = k + CHUNK - 1
        if last > n then last = n end
        parts[p] = char(unpack(out, k, last))
    end
    return concat(parts)
end

-- A token's 4-bit length of 15 goes on in the next bytes, each added, while they are 255.
-- Returns the length and the position after it, or nil if the block ends first.
local function long_length(s, ip, iend, len)
    repeat
        if ip >= iend then return nil end
        local b = byte(s, ip)
        ip = ip + 1
        len = len + b
    until b ~= 255
    return len, ip
end

function M.decompress(s, i, n, declared)
    local ip, iend = i, i + n          -- next input byte, one past the last
    local out, op = {}, 0              -- output bytes, count so far
    local match_start, match_end       -- where the last match lies in the output
    if n == 0 then
        return nil, "lz4_malformed", "empty block"
    end
    while true do
        if ip >= iend then
            return nil, "lz4_malformed", "block ends where a token is expected"
        end
        local token = byte(s, ip)
        ip = ip + 1
        -- literals
        local lit = (token - token % 16) / 16
        if lit == 15 then
            lit, ip = long_length(s, ip, iend, lit)
            if lit == nil then return nil, "lz4_malformed", "block ends inside a literal length" end
        end
        if ip + lit > iend then
            return nil, "lz4_malformed", "literals run past the end of the block"
        end
        if op + lit > declared then
            return nil, "lz4_length_mismatch", "output would exceed the declared length"
        end
        -- copy literals in pieces (string.byte returns its values on the C stack)
        local k = ip
        while k < ip + lit do
            local last = k + 255
            if last > ip + lit - 1 then last = ip + lit - 1 end
            local bytes = { byte(s, k, last) }
            for m = 1, #bytes do out[op + m] = bytes[m] end
            op = op + #bytes
            k = last + 1
        end
        ip = ip + lit
        if ip == iend then break end   -- the last sequence has literals only
        -- match
        if ip + 1 >= iend then
            return nil, "lz4_malformed", "block ends inside a match offset"
        end
        local lo, hi = byte(s, ip, ip + 1)
        ip = ip + 2
        local offset = lo + hi * 256
        if offset == 0 or offset > op then
            return nil, "lz4_malformed", "a match offset is 0 or points before the start of the output"
        end
        local mlen = token % 16
        if mlen == 15 then
            mlen, ip = long_length(s, ip, iend, mlen)
            if mlen == nil then return nil, "lz4_malformed", "block ends inside a match length" end
        end
        mlen = mlen + 4
        if op + mlen > declared then
            return nil, "lz4_length_mismatch", "output would exceed the declared length"
        end
        match_start, match_end = op, op + mlen
        local from = op - offset
        for m = 1, mlen do out[op + m] = out[from + m] end   -- byte by byte: overlap repeats
        op = op + mlen
    end
    if op ~= declared then
        return nil, "lz4_length_mismatch", string.format("block yields %d bytes, header declares %d", op, declared)
    end
    if match_start and (match_start + 12 > declared or match_end + 5 > declared) then
        return nil, "lz4_end_of_block", string.format("the last match covers bytes %d..%d of %d: it must start 12 and end 5 bytes before the end or earlier", match_start, match_end, declared)
    end
    return to_string(out, op)
end

return M
