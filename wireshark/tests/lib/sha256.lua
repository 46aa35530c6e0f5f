-- tests/lib/sha256.lua: SHA-256 in pure Lua on cqlframe.bit (works on Lua 5.2 and 5.4), to
-- compare content with the manifest's {"length", "sha256"} blobs.
local bit = require("cqlframe.bit")
local band, bor, bxor, bnot, rshift, lshift = bit.band, bit.bor, bit.bxor, bit.bnot, bit.rshift, bit.lshift
local byte = string.byte
local M32 = 4294967296

local K = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

local function rotr(x, n) return bor(rshift(x, n), lshift(x, 32 - n)) end

return function(msg)
    local h = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 }
    local len = #msg
    local bits = len * 8
    local tail = "\128" .. string.rep("\0", (55 - len) % 64)
    local lenbytes = {}
    for k = 8, 1, -1 do lenbytes[k] = string.char(bits % 256); bits = math.floor(bits / 256) end
    msg = msg .. tail .. table.concat(lenbytes)
    local w = {}
    for chunk = 1, #msg, 64 do
        for t = 0, 15 do
            local a, b, c, d = byte(msg, chunk + 4 * t, chunk + 4 * t + 3)
            w[t] = ((a * 256 + b) * 256 + c) * 256 + d
        end
        for t = 16, 63 do
            local x, y = w[t - 15], w[t - 2]
            local s0 = bxor(rotr(x, 7), rotr(x, 18), rshift(x, 3))
            local s1 = bxor(rotr(y, 17), rotr(y, 19), rshift(y, 10))
            w[t] = (w[t - 16] + s0 + w[t - 7] + s1) % M32
        end
        local a, b, c, d, e, f, g, hh = h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8]
        for t = 0, 63 do
            local S1 = bxor(rotr(e, 6), rotr(e, 11), rotr(e, 25))
            local ch = bxor(band(e, f), band(bnot(e), g))
            local t1 = (hh + S1 % M32 + ch % M32 + K[t + 1] + w[t]) % M32
            local S0 = bxor(rotr(a, 2), rotr(a, 13), rotr(a, 22))
            local maj = bxor(band(a, b), band(a, c), band(b, c))
            local t2 = (S0 % M32 + maj % M32) % M32
            hh, g, f, e, d, c, b, a = g, f, e, (d + t1) % M32, c, b, a, (t1 + t2) % M32
        end
        h[1] = (h[1] + a) % M32; h[2] = (h[2] + b) % M32; h[3] = (h[3] + c) % M32; h[4] = (h[4] + d) % M32
        h[5] = (h[5] + e) % M32; h[6] = (h[6] + f) % M32; h[7] = (h[7] + g) % M32; h[8] = (h[8] + hh) % M32
    end
    local out = {}
    for k = 1, 8 do out[k] = string.format("%08x", h[k]) end
    return table.concat(out)
end
