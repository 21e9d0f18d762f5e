"""Model providers: one small contract (`base.Provider`) and one module per backend.

SDKs are imported only when a model call is made, never at import time of this package.
"""
