//! The UKVS line model: headers, fields, quoted values, OSLJ; writer and
//! validation.
