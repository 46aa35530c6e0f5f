//! Polynomial arithmetic modulo a CRC polynomial, in `const fn`s: every folding, shifting and
//! combining constant of the fast paths is derived here from the polynomial alone.
//!
//! Convention (the reflected one of CRC-32 and CRC-32C): a `u32` holds a polynomial of degree
//! below 32 with the coefficient of `x^0` in bit 31 and that of `x^31` in bit 0, which is how a
//! reflected CRC register holds its remainder; `poly` is the reflected generator without its
//! `x^32` term (`0xEDB8_8320` for IEEE, `0x82F6_3B78` for Castagnoli).
//!
//! Carry-less multiplication (PCLMULQDQ, PMULL) of two such operands, held bit-reversed in 64
//! bits, yields the bit-reversed product times `x` (the product of two 64-bit reversed values has
//! 127 bits but lands in a 128-bit reversed register): the keys below absorb that extra `x`.

/// `a * b mod P`.
pub(crate) const fn mul_mod(a: u32, mut b: u32, poly: u32) -> u32 {
    let mut product = 0;
    let mut bit = 0;
    while bit < 32 {
        // `a`'s bit 31 - i is the coefficient of x^i; `b` holds b * x^i at this point.
        if a & (0x8000_0000 >> bit) != 0 {
            product ^= b;
        }
        b = if b & 1 != 0 { (b >> 1) ^ poly } else { b >> 1 };
        bit += 1;
    }
    product
}

/// `x^n mod P`, by square and multiply.
pub(crate) const fn x_pow_mod(mut n: u64, poly: u32) -> u32 {
    let mut result = 0x8000_0000; // x^0
    let mut square = 0x4000_0000; // x^1, then x^2, x^4, ...
    while n != 0 {
        if n & 1 != 0 {
            result = mul_mod(result, square, poly);
        }
        square = mul_mod(square, square, poly);
        n >>= 1;
    }
    result
}

/// A polynomial of degree below 32 as a 64-bit carry-less multiplication operand (bit-reversed
/// over 64 bits: the 32 coefficients land in the upper half).
const fn clmul_operand(reduced: u32) -> u64 {
    (reduced as u64) << 32
}

/// The carry-less multiplication operand that multiplies a reversed 64-bit operand by
/// `x^n mod P` (`n >= 1`): the product carries an extra `x`, so the operand is `x^(n-1) mod P`.
pub(crate) const fn times_x_pow(poly: u32, n: u64) -> u64 {
    clmul_operand(x_pow_mod(n - 1, poly))
}

/// The key pair that moves a 128-bit lane forward by `bytes` (`bytes >= 1`).
///
/// A lane loaded from 16 message bytes holds `H = H_hi * x^64 + H_lo`, with `H_hi` (the first 8
/// bytes) in the low quadword. Moving it `D = 8 * bytes` bits later multiplies it by `x^D`:
/// `H_hi * (x^(D+64) mod P) + H_lo * (x^D mod P)`, a polynomial of degree below 96 that is
/// XORed into the lane found `bytes` later.
pub(crate) const fn fold_key(poly: u32, bytes: u64) -> [u64; 2] {
    [
        times_x_pow(poly, 8 * bytes + 64),
        times_x_pow(poly, 8 * bytes),
    ]
}

/// The key that injects a 32-bit CRC register `r` (held in the low 32 bits of a quadword) into
/// a 128-bit lane ending `bytes` after the point where `r` was taken: the register's remainder
/// stands for the message times `x^32`, and the lane is itself multiplied by `x^32` when it is
/// reduced, so the product wanted is `r * x^(8 * bytes - 32)`; the low-half placement of `r`
/// adds `x^32` and the carry-less product `x`, hence `x^(8 * bytes - 65)`.
pub(crate) const fn inject_key(poly: u32, bytes: u64) -> u64 {
    clmul_operand(x_pow_mod(8 * bytes - 65, poly))
}

/// The key that shifts a 32-bit register `r` forward over `bytes` zero bytes when `r` (low 32
/// bits of a quadword) is carry-less multiplied by it and the low quadword of the product is fed
/// to a CRC instruction from register 0: that computes `r * key * x * x^32`, so
/// `key = x^(8 * bytes - 33) mod P`.
pub(crate) const fn shift_key(poly: u32, bytes: u64) -> u64 {
    x_pow_mod(8 * bytes - 33, poly) as u64
}

/// Barrett reduction constants: the remainder of a degree-<64 `D` is
/// `D + floor(floor(D / x^32) * mu / x^32) * P` (low 32 coefficients), with `mu = floor(x^64 / P)`.
/// Both `mu` and `P` have degree 32; they are held bit-reversed over 33 bits (the coefficient
/// of `x^32` in bit 0) so that, multiplied by a 32-bit reversed operand, the wanted coefficients
/// land on a 32-bit boundary of the product.
pub(crate) struct Barrett {
    pub(crate) mu: u64,
    pub(crate) poly: u64,
}

impl Barrett {
    pub(crate) const fn new(poly: u32) -> Self {
        // Long division of x^64 by P in the plain bit order (bit k holds x^k).
        let p = (1u64 << 32) | poly.reverse_bits() as u64;
        let mut remainder: u128 = 1 << 64;
        let mut quotient: u64 = 0;
        let mut k = 64;
        while k >= 32 {
            if remainder & (1 << k) != 0 {
                quotient |= 1 << (k - 32);
                remainder ^= (p as u128) << (k - 32);
            }
            k -= 1;
        }
        Barrett {
            mu: quotient.reverse_bits() >> 31,
            poly: ((poly as u64) << 1) | 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bitwise::{reflected_update, CRC32C_POLY, CRC32_POLY};

    #[test]
    fn powers_of_x_agree_with_the_register() {
        // From register 0, one message byte `b` leaves `b * x^32 mod P`; the byte 0x01 is
        // `x^7` in reflected bit order, so it leaves x^39 mod P.
        for poly in [CRC32_POLY, CRC32C_POLY] {
            assert_eq!(reflected_update(0, poly, &[0x01]), x_pow_mod(39, poly));
            // And each zero byte multiplies by x^8.
            for zeros in 0..40u64 {
                let mut msg = vec![0x01];
                msg.resize(1 + zeros as usize, 0);
                assert_eq!(
                    reflected_update(0, poly, &msg),
                    x_pow_mod(39 + 8 * zeros, poly)
                );
            }
        }
    }

    #[test]
    fn multiplication_adds_exponents() {
        for poly in [CRC32_POLY, CRC32C_POLY] {
            for (a, b) in [(0u64, 5u64), (31, 33), (100, 1000), (4095, 77_777)] {
                let product = mul_mod(x_pow_mod(a, poly), x_pow_mod(b, poly), poly);
                assert_eq!(product, x_pow_mod(a + b, poly));
            }
        }
    }

    #[test]
    fn keys_match_the_published_constants() {
        // Intel's "Fast CRC computation using PCLMULQDQ" (and zlib, Linux) give the reflected
        // IEEE fold-by-4 (64-byte) keys as x^(4*128+32) and x^(4*128-32) mod P, bit-reflected
        // and shifted left once: 0x1_5444_2BD4 and 0x1_C6E4_1596.
        assert_eq!(
            (x_pow_mod(4 * 128 + 32, CRC32_POLY) as u64) << 1,
            0x1_5444_2BD4
        );
        assert_eq!(
            (x_pow_mod(4 * 128 - 32, CRC32_POLY) as u64) << 1,
            0x1_C6E4_1596
        );
        // Barrett constants of the same paper: P' = 0x1_DB71_0641, mu' = 0x1_F701_1641.
        let barrett = Barrett::new(CRC32_POLY);
        assert_eq!((barrett.poly, barrett.mu), (0x1_DB71_0641, 0x1_F701_1641));
        // Our keys are the same polynomials moved by our own convention's offsets.
        assert_eq!(
            fold_key(CRC32_POLY, 64)[0],
            (x_pow_mod(575, CRC32_POLY) as u64) << 32
        );
    }
}
