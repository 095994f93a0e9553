import streamlit as st
st.title("Compare")
