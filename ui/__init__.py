"""Dashboard helpers: cached data access (data), pure figure builders (charts), URL-backed
filters (filters), safe text (text), pure maths for the bundle view (geometry, stats).

Only data, filters, auth and widgets import streamlit; the rest is plain Python and tested
as such. Nothing here imports torch, sentence-transformers, llama_cpp or openai.
"""
