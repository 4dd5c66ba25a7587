"""What may be shown: secrets redacted, control characters and odd bytes escaped, did-you-mean hints."""
