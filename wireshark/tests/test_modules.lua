-- tests/test_modules.lua: the pure-Lua checksum, LZ4 and UTF-8 modules against the golden vectors.
--
--   lua5.2 wireshark/tests/test_modules.lua [repo-root]     (and the same with lua5.4)
--
-- For every frames case of vectors/manifest.json and every frame of the session cases:
--   * the CRC24 of the header bytes equals the case's header_crc24 (CRC-1, FMT-2, FMT-11);
--   * the payload checksum of the negotiated algorithm equals payload_checksum (CRC-2, CRC-3,
--     CRC-4);
--   * for LZ4 frames with an uncompressed length, the block decompresses to the case's content
--     (hex or sha256) (LZ4-1, LZ4-2, LZ4-4);
-- and for the invalid cases whose error is a checksum mismatch (RECV-1, RECV-2) or an LZ4
-- failure (LZ4-4, LZ4-6): the module computes the reference's `computed` value, or fails the
-- block under the same rule.
-- Prints one line per failure and ends with "modules (<Lua version>): N passed, M failed".

local root = arg[1] or "."
package.path = root .. "/wireshark/?.lua;" .. root .. "/wireshark/tests/lib/?.lua;" .. package.path

local crc = require("cqlframe.crc")
local lz4 = require("cqlframe.lz4")
local utf8 = require("cqlframe.utf8")
local utf8_text = utf8.text
local json = require("json")
local t = require("harness")
local check, read, same = t.check, t.read, t.same

local manifest = json.decode(read(root .. "/vectors/manifest.json"))

-- The little-endian integer of the n bytes at data[at..] (read here, not by the module under test).
local function le(data, at, n)
    local v = 0
    for k = at + n - 1, at, -1 do v = v * 256 + data:byte(k) end
    return v
end

-- One decoded-frame check: frame f of a stream `data` with `format` and `checksum`.
local function check_frame(id, data, format, checksum, f)
    local at = f.offset + 1
    local hlen = format == "lz4" and 8 or 6
    local fields = hlen - 3
    local stored = le(data, at + fields, 3)
    local computed = crc.crc24(data, at, at + fields - 1)
    check(computed == stored and string.format("%06x", computed) == f.header_crc24,
        string.format("%s frame@%d crc24 %06x, manifest %s", id, f.offset, computed, f.header_crc24))
    local plen = f.payload_length
    local p0 = at + hlen
    local sum = crc.payload(checksum, data, p0, p0 + plen - 1)
    check(string.format("%08x", sum) == f.payload_checksum,
        string.format("%s frame@%d %s %08x, manifest %s", id, f.offset, checksum, sum, f.payload_checksum))
    if format == "lz4" and f.uncompressed_length ~= 0 then
        local content, kind, reason = lz4.decompress(data, p0, plen, f.uncompressed_length)
        check(content ~= nil and same(f.content, content),
            string.format("%s frame@%d lz4 %s", id, f.offset, content and "content differs" or (kind .. ": " .. reason)))
    end
end

local HEADER_RULES = { ["RECV-1"] = true }
-- a malformed block (the sender broke LZ4-1) and a length mismatch both fail under LZ4-4; a
-- block that breaks LZ4's end-of-block rules (the sender broke LZ4-5) fails LZ4-6
local lz4_rule = { lz4_malformed = "LZ4-4", lz4_length_mismatch = "LZ4-4", lz4_end_of_block = "LZ4-6" }

for _, case in ipairs(manifest.cases) do
    if case.kind == "frames" then
        local data = read(root .. "/vectors/" .. case.input.file)
        for _, f in ipairs(case.expected.frames) do
            check_frame(case.id, data, case.format, case.checksum, f)
        end
        local e = case.expected.error
        if e ~= json.null then
            local at = e.offset + 1
            local hlen = case.format == "lz4" and 8 or 6
            if HEADER_RULES[e.rule] then
                local c = crc.crc24(data, at, at + hlen - 4)
                check(c == e.detail.computed, string.format("%s: crc24 of the bad header %06x, reference %06x", case.id, c, e.detail.computed))
            elseif e.rule == "RECV-2" then
                -- the header is good: read the length, compute the trailer as the reference did
                local plen = le(data, at, 3) % 131072
                local c = crc.payload(e.detail.algorithm, data, at + hlen, at + hlen + plen - 1)
                check(c == e.detail.computed, string.format("%s: %s of the bad payload %08x, reference %08x", case.id, e.detail.algorithm, c, e.detail.computed))
            elseif lz4_rule[e.kind] then
                local word = le(data, at, 5)
                local clen = word % 131072
                local ulen = math.floor(word / 131072) % 131072
                local content, kind = lz4.decompress(data, at + 8, clen, ulen)
                check(content == nil and kind == e.kind and lz4_rule[kind] == e.rule,
                    string.format("%s: lz4 module says %s, reference %s (%s)", case.id, tostring(kind), e.rule, e.kind))
            end
        end
    else
        local streams = { client_receives = case.server_stream, server_receives = case.client_stream }
        for side, blob in pairs(streams) do
            local r = case.expected[side]
            if r.switch ~= json.null then
                local data = read(root .. "/vectors/" .. blob.file)
                for _, f in ipairs(r.frames) do
                    check_frame(case.id .. ":" .. side, data, r.switch.format, r.switch.checksum, f)
                end
            end
        end
    end
end

-- Check values of the catalogue (spec, Checksums): "123456789" and the empty payload.
check(crc.crc24("123456789") == 0x4B3F02, "crc24 check value")
check(crc.crc32("123456789") == 0xE2A261A7, "seeded crc32 check value")
check(crc.crc32c("123456789") == 0xE3069283, "crc32c check value")
check(crc.crc32("") == 0x44777ED3, "seeded crc32 of the empty payload")
check(crc.crc32_unseeded("123456789") == 0xCBF43926, "plain crc32 check value")

-- Wire strings shown in labels: well-formed UTF-8 kept, every other byte as \xNN (overlong
-- forms, surrogates, stray continuation and lead bytes, a sequence cut short).
for _, case in ipairs({
    { "lz4", "lz4" }, { "caf\195\169", "caf\195\169" }, { "\240\159\152\128", "\240\159\152\128" },
    { "3/v\239", "3/v\\xef" }, { "\255", "\\xff" }, { "\128a", "\\x80a" },
    { "\224\128\128", "\\xe0\\x80\\x80" }, { "\237\160\128", "\\xed\\xa0\\x80" },
    { "\195", "\\xc3" }, { "\244\144\128\128", "\\xf4\\x90\\x80\\x80" },
}) do
    check(utf8_text(case[1]) == case[2], "utf8 text of " .. t.hex(case[1]) .. ": " .. utf8_text(case[1]))
    check(utf8.valid(case[1]) == (case[1] == case[2]), "utf8 valid of " .. t.hex(case[1]))
end

t.finish("modules")
