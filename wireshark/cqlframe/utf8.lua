-- cqlframe/utf8.lua: wire strings made safe to show. Pure Lua (5.2 and later, no utf8 library),
-- so it runs in the dissector and in the standalone tests.

local M = {}

-- Lead bytes of well-formed UTF-8 (RFC 3629): sequence length and the range of the second byte.
local function utf8_lead(b)
    if b < 0x80 then return 1, 0, 0 end
    if b >= 0xC2 and b <= 0xDF then return 2, 0x80, 0xBF end
    if b == 0xE0 then return 3, 0xA0, 0xBF end
    if b == 0xED then return 3, 0x80, 0x9F end
    if b >= 0xE1 and b <= 0xEF then return 3, 0x80, 0xBF end
    if b == 0xF0 then return 4, 0x90, 0xBF end
    if b >= 0xF1 and b <= 0xF3 then return 4, 0x80, 0xBF end
    if b == 0xF4 then return 4, 0x80, 0x8F end
    return 0
end

--- The text of a [string] (UTF-8) with each byte that belongs to no well-formed sequence shown
--- as \xNN: labels and expert infos must stay valid UTF-8 whatever the wire holds (Wireshark
--- passes them on as they are).
function M.text(s)
    if not s:find("[\128-\255]") then return s end
    local out, i, n = {}, 1, #s
    while i <= n do
        local len, lo, hi = utf8_lead(s:byte(i))
        local ok = len > 0 and i + len - 1 <= n
        for k = i + 1, ok and i + len - 1 or i do
            local c = s:byte(k)
            local min, max = 0x80, 0xBF
            if k == i + 1 then min, max = lo, hi end
            if c < min or c > max then ok = false end
        end
        if ok then
            out[#out + 1] = s:sub(i, i + len - 1)
            i = i + len
        else
            out[#out + 1] = string.format("\\x%02x", s:byte(i))
            i = i + 1
        end
    end
    return table.concat(out)
end

--- Whether s is well-formed UTF-8 (M.text changes every other string).
function M.valid(s)
    return M.text(s) == s
end

return M
