-- tests/lib/json.lua: a small JSON decoder for the test runner (objects, arrays, strings with
-- escapes, numbers, true/false/null). null decodes to json.null so that keys stay visible.
local M = { null = setmetatable({}, { __tostring = function() return "null" end }) }

local byte, sub, find, char = string.byte, string.sub, string.find, string.char

local function utf8_encode(cp)
    if cp < 0x80 then return char(cp) end
    if cp < 0x800 then return char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64) end
    return char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
end

function M.decode(s)
    local pos = 1
    local value
    local function ws()
        pos = find(s, "[^ \t\r\n]", pos) or #s + 1
    end
    local function err(what) error(string.format("json: %s at byte %d", what, pos)) end
    local function str()
        pos = pos + 1
        local parts = {}
        while true do
            local a, b = find(s, '["\\]', pos)
            if not a then err("unterminated string") end
            parts[#parts + 1] = sub(s, pos, a - 1)
            if sub(s, a, a) == '"' then pos = a + 1; break end
            local e = sub(s, a + 1, a + 1)
            local map = { b = "\b", f = "\f", n = "\n", r = "\r", t = "\t", ['"'] = '"', ["\\"] = "\\", ["/"] = "/" }
            if map[e] then parts[#parts + 1] = map[e]; pos = a + 2
            elseif e == "u" then parts[#parts + 1] = utf8_encode(tonumber(sub(s, a + 2, a + 5), 16)); pos = a + 6
            else err("bad escape") end
        end
        return table.concat(parts)
    end
    -- The comma-separated items of an object or array, from its opening character to `close`;
    -- item() reads one.
    local function items(close, item)
        pos = pos + 1
        ws()
        if sub(s, pos, pos) == close then pos = pos + 1; return end
        while true do
            item()
            ws()
            local d = sub(s, pos, pos)
            pos = pos + 1
            if d == close then return end
            if d ~= "," then err("expected , or " .. close) end
        end
    end
    function value()
        ws()
        local c = sub(s, pos, pos)
        if c == "{" then
            local t = {}
            items("}", function()
                ws()
                if sub(s, pos, pos) ~= '"' then err("expected key") end
                local k = str()
                ws()
                if sub(s, pos, pos) ~= ":" then err("expected colon") end
                pos = pos + 1
                t[k] = value()
            end)
            return t
        elseif c == "[" then
            local t = {}
            items("]", function() t[#t + 1] = value() end)
            return t
        elseif c == '"' then
            return str()
        elseif sub(s, pos, pos + 3) == "true" then pos = pos + 4; return true
        elseif sub(s, pos, pos + 4) == "false" then pos = pos + 5; return false
        elseif sub(s, pos, pos + 3) == "null" then pos = pos + 4; return M.null
        else
            local a, b = find(s, "^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
            if not a then err("unexpected character") end
            pos = b + 1
            return tonumber(sub(s, a, b))
        end
    end
    local v = value()
    return v
end

return M
