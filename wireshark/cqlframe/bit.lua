-- cqlframe/bit.lua: the bit operations the dissector needs, with one behaviour everywhere.
--
-- Wireshark provides the BitOp library as the global `bit` in every version (Lua 5.1/5.2 up
-- to 4.2, Lua 5.3/5.4 from 4.4); its results are signed 32-bit integers. Native operators
-- (`&`, `>>`) are a syntax error in Lua 5.2, so they are never written in this code. Outside
-- Wireshark (the standalone tests) this module falls back to `bit32` (Lua 5.2) or to native
-- operators compiled at run time with load() (Lua 5.3+), and gives BitOp's signed results.
--
-- Callers must not rely on the sign: normalise with u32() before comparing or displaying.

local M = {}

local impl = rawget(_G, "bit")
if impl == nil then
    local ok, b = pcall(require, "bit")
    if ok and type(b) == "table" then impl = b end
end
if impl == nil and rawget(_G, "bit32") ~= nil then
    local b32 = rawget(_G, "bit32")
    local function s(x) if x >= 0x80000000 then return x - 0x100000000 end return x end
    impl = {
        band = function(...) return s(b32.band(...)) end,
        bor = function(...) return s(b32.bor(...)) end,
        bxor = function(...) return s(b32.bxor(...)) end,
        bnot = function(x) return s(b32.bnot(x)) end,
        lshift = function(x, n) return s(b32.lshift(x, n)) end,
        rshift = function(x, n) return s(b32.rshift(x, n)) end,
    }
end
if impl == nil then
    -- Lua 5.3+: native operators, hidden from the Lua 5.2 parser inside a string.
    impl = assert(load([[
        local function s(x) x = x & 0xFFFFFFFF; if x >= 0x80000000 then return x - 0x100000000 end return x end
        return {
            band = function(a, b, c) if c then return s(a & b & c) end return s(a & b) end,
            bor = function(a, b, c) if c then return s(a | b | c) end return s(a | b) end,
            bxor = function(a, b, c) if c then return s(a ~ b ~ c) end return s(a ~ b) end,
            bnot = function(x) return s(~x) end,
            lshift = function(x, n) return s((x & 0xFFFFFFFF) << n) end,
            rshift = function(x, n) return s((x & 0xFFFFFFFF) >> n) end,
        }
    ]]))()
end

M.band, M.bor, M.bxor, M.bnot = impl.band, impl.bor, impl.bxor, impl.bnot
M.lshift, M.rshift = impl.lshift, impl.rshift

--- Normalises a BitOp result (signed 32-bit) to 0 .. 2^32-1.
function M.u32(x)
    return x % 4294967296
end

return M
