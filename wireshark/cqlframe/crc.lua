-- cqlframe/crc.lua: the three checksums of the frame layer, table-driven, pure Lua.
--
--   crc24(s, i, j)   header check (CRC-1): width 24, poly 0x974F0B, init 0x875060, not reflected
--   crc32(s, i, j)   payload check (CRC-2): CRC-32/ISO-HDLC fed FA 2D 55 CA before the payload
--   crc32c(s, i, j)  payload check (CRC-3): CRC-32/ISCSI, unseeded
--
-- s is a Lua string, i..j the 1-based inclusive range (default: all of s). Results are
-- non-negative integers. Works on Lua 5.2 and 5.4 through cqlframe.bit (no native operators).

local bit = require("cqlframe.bit")
local band, bxor, lshift, rshift, bnot = bit.band, bit.bxor, bit.lshift, bit.rshift, bit.bnot
local byte = string.byte

local M = {}

-- CRC24 table: T24[x] is the register after shifting the byte x (placed at bits 16-23) through
-- 8 rounds of the bitwise loop of the spec.
local T24 = {}
for x = 0, 255 do
    local c = lshift(x, 16)
    for _ = 1, 8 do
        c = lshift(c, 1)
        if band(c, 0x1000000) ~= 0 then c = bxor(c, 0x1974F0B) end
    end
    T24[x] = band(c, 0xFFFFFF)
end

--- Reflected CRC-32 table for the reversed polynomial `rpoly`.
local function reflected_table(rpoly)
    local t = {}
    for x = 0, 255 do
        local c = x
        for _ = 1, 8 do
            if band(c, 1) ~= 0 then c = bxor(rshift(c, 1), rpoly) else c = rshift(c, 1) end
        end
        t[x] = c
    end
    return t
end
local T32 = reflected_table(0xEDB88320)   -- 0x04C11DB7 reflected
local T32C = reflected_table(0x82F63B78)  -- 0x1EDC6F41 reflected

function M.crc24(s, i, j)
    i, j = i or 1, j or #s
    local crc = 0x875060
    for k = i, j do
        crc = bxor(band(lshift(crc, 8), 0xFFFFFF), T24[bxor(rshift(crc, 16), byte(s, k))])
    end
    return crc
end

-- Runs the reflected register `crc` over s[i..j]; 8 bytes per step where possible.
local function update(t, crc, s, i, j)
    local k = i
    while k + 7 <= j do
        local b1, b2, b3, b4, b5, b6, b7, b8 = byte(s, k, k + 7)
        crc = bxor(rshift(crc, 8), t[band(bxor(crc, b1), 255)])
        crc = bxor(rshift(crc, 8), t[band(bxor(crc, b2), 255)])
        crc = bxor(rshift(crc, 8), t[band(bxor(crc, b3), 255)])
        crc = bxor(rshift(crc, 8), t[band(bxor(crc, b4), 255)])
        crc = bxor(rshift(crc, 8), t[band(bxor(crc, b5), 255)])
        crc = bxor(rshift(crc, 8), t[band(bxor(crc, b6), 255)])
        crc = bxor(rshift(crc, 8), t[band(bxor(crc, b7), 255)])
        crc = bxor(rshift(crc, 8), t[band(bxor(crc, b8), 255)])
        k = k + 8
    end
    for m = k, j do
        crc = bxor(rshift(crc, 8), t[band(bxor(crc, byte(s, m)), 255)])
    end
    return crc
end

-- The CRC32 register after the seed bytes FA 2D 55 CA (0x44777ED3 once finalised: the
-- seeded CRC32 of an empty payload).
local SEEDED = update(T32, -1, "\250\45\85\202", 1, 4)

function M.crc32(s, i, j)
    return bnot(update(T32, SEEDED, s, i or 1, j or #s)) % 4294967296
end

function M.crc32c(s, i, j)
    return bnot(update(T32C, -1, s, i or 1, j or #s)) % 4294967296
end

--- Plain CRC-32/ISO-HDLC, no seed (only to recognise a sender that left the seed out).
function M.crc32_unseeded(s, i, j)
    return bnot(update(T32, -1, s, i or 1, j or #s)) % 4294967296
end

--- The payload checksum by name: "crc32" or "crc32c".
function M.payload(name, s, i, j)
    if name == "crc32c" then return M.crc32c(s, i, j) end
    return M.crc32(s, i, j)
end

return M
